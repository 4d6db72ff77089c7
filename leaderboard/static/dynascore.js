/**
 * Dynascore in the browser: the formula of scoring/dynascore.py, so that the leaderboard
 * page re-ranks at once when a viewer moves a weight slider. No dependencies; a test
 * (tests/scoring/test_browser_parity.py) runs this file under Node on random tables and
 * holds it to the Python within 1e-9.
 *
 *   1. Each metric becomes a good: offset + direction * value (memory: cap - used).
 *   2. Models are sorted by perf (exact ties by name). AMRS(M) is the mean over adjacent
 *      pairs of |dM| / dperf, skipping pairs whose perf gap is not above
 *      1e-4 * max |perf|. AMRS(perf) = 1.
 *   3. Weights are normalised to sum 1; Dynascore = sum over metrics, in name order, of
 *      w * good / AMRS. A metric whose AMRS is 0 or undefined contributes 0.
 *
 * Usage:
 *   Dynascore.compute(table, weights, directions, offsets, perf)
 *     table:      {model: {metric: value}}, every model with the same metrics
 *     weights:    {metric: weight >= 0}; metrics not named weigh 0
 *     directions: {metric: +1 | -1}, default +1;  offsets: {metric: number}, default 0
 *     perf:       the perf metric's name, default "perf"
 *     returns     {model: dynascore}
 *   Dynascore.rank(...same arguments...) -> [model, ...], best first; ties go to the
 *     better perf, then the better goods in metric-name order, then the name.
 *   Dynascore.floorOrder(order, flagged) -> order with the flagged models (perf interval
 *     not above the majority-class baseline) moved after all others (scoring/floor.py).
 */
(function (root) {
  "use strict";

  var CUTOFF = 1e-4;

  // Python sorts str by code point; "<" compares UTF-16 units: the same for names
  // without characters beyond the Basic Multilingual Plane.
  function byName(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function prepare(table, directions, offsets, perf) {
    directions = directions || {};
    offsets = offsets || {};
    perf = perf || "perf";
    var models = Object.keys(table).sort(byName);
    if (models.length === 0) throw new Error("The table has no models");
    var metrics = Object.keys(table[models[0]]).sort(byName);
    var p = metrics.indexOf(perf);
    if (p < 0) throw new Error("Unknown perf metric " + perf + "; the table has: " + metrics);
    var goods = models.map(function (model) {
      return metrics.map(function (metric) {
        var direction = metric in directions ? directions[metric] : 1;
        var offset = metric in offsets ? offsets[metric] : 0;
        return offset + direction * table[model][metric];
      });
    });
    return { models: models, metrics: metrics, perf: p, goods: goods, amrs: amrs(goods, p) };
  }

  function amrs(goods, p) {
    var n = goods.length;
    var k = n ? goods[0].length : 0;
    // Stable sort of name-ordered rows: exact perf ties stay in name order.
    var order = goods.map(function (_, i) { return i; });
    order.sort(function (a, b) { return goods[a][p] - goods[b][p]; });
    var top = 0;
    for (var i = 0; i < n; i++) top = Math.max(top, Math.abs(goods[i][p]));
    var sums = new Array(k).fill(0);
    var count = 0;
    for (var j = 1; j < n; j++) {
      var lo = goods[order[j - 1]], hi = goods[order[j]];
      var gap = hi[p] - lo[p];
      if (!(gap > CUTOFF * top)) continue;
      count += 1;
      for (var m = 0; m < k; m++) sums[m] += Math.abs(hi[m] - lo[m]) / gap;
    }
    var result = sums.map(function (s) { return count > 0 ? s / count : NaN; });
    result[p] = 1;
    return result;
  }

  function scores(prepared, weights) {
    var metrics = prepared.metrics;
    var raw = metrics.map(function (metric) { return metric in weights ? weights[metric] : 0; });
    Object.keys(weights).forEach(function (metric) {
      if (metrics.indexOf(metric) < 0) throw new Error("Unknown metric in weights: " + metric);
    });
    var total = raw.reduce(function (a, b) { return a + b; }, 0);
    if (!(total > 0) || raw.some(function (w) { return w < 0; })) {
      throw new Error("Weights must be >= 0 with a positive sum");
    }
    var w = raw.map(function (x) { return x / total; });
    return prepared.goods.map(function (row) {
      var score = 0;
      for (var m = 0; m < metrics.length; m++) {
        var a = prepared.amrs[m];
        if (w[m] !== 0 && isFinite(a) && a > 0) score += w[m] * (row[m] / a);
      }
      return score;
    });
  }

  function compute(table, weights, directions, offsets, perf) {
    var prepared = prepare(table, directions, offsets, perf);
    var values = scores(prepared, weights);
    var result = {};
    prepared.models.forEach(function (model, i) { result[model] = values[i]; });
    return result;
  }

  function rank(table, weights, directions, offsets, perf) {
    var prepared = prepare(table, directions, offsets, perf);
    var values = scores(prepared, weights);
    var p = prepared.perf;
    var keys = [p].concat(prepared.metrics.map(function (_, m) { return m; }).filter(
      function (m) { return m !== p; }));
    var order = prepared.models.map(function (_, i) { return i; });
    order.sort(function (a, b) {
      if (values[a] !== values[b]) return values[b] - values[a];
      for (var i = 0; i < keys.length; i++) {
        var ga = prepared.goods[a][keys[i]], gb = prepared.goods[b][keys[i]];
        if (ga !== gb) return gb - ga;
      }
      return a - b;
    });
    return order.map(function (i) { return prepared.models[i]; });
  }

  function floorOrder(order, flagged) {
    var isFlagged = {};
    (flagged || []).forEach(function (m) { isFlagged[m] = true; });
    return order.filter(function (m) { return !isFlagged[m]; }).concat(
      order.filter(function (m) { return isFlagged[m]; }));
  }

  var api = { compute: compute, rank: rank, floorOrder: floorOrder, CUTOFF: CUTOFF };
  if (typeof module === "object" && module.exports) module.exports = api;
  root.Dynascore = api;
})(typeof globalThis !== "undefined" ? globalThis : this);

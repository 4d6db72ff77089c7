/* The task page: re-rank the table in the browser as the metric weight sliders move.
 * The formula is static/dynascore.js (the same as the server's), and so is the baseline
 * floor; the table data, the directions and the offsets come from the page (#board-data).
 * Dataset weights change every average, the intervals and the baseline: releasing a
 * dataset slider loads the page again for them. The URL carries both kinds of weights. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("board-data").textContent);
  var tbody = document.querySelector("#board tbody");
  var sliders = Array.prototype.slice.call(document.querySelectorAll("input[type=range][data-metric]"));
  var datasetSliders = Array.prototype.slice.call(
    document.querySelectorAll("input[type=range][data-dataset]"));
  var note = document.getElementById("weights-note");
  var staleNote = document.getElementById("stale-note");
  var announce = document.getElementById("rank-announce");
  var loaded = currentWeights();

  function format(v) {
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : v.toFixed(2);
  }

  function currentWeights() {
    var weights = {};
    sliders.forEach(function (s) { weights[s.dataset.metric] = parseFloat(s.value); });
    return weights;
  }

  function currentDatasetWeights() {
    var weights = {};
    datasetSliders.forEach(function (s) { weights[s.dataset.dataset] = parseFloat(s.value); });
    return weights;
  }

  function weightsQuery(weights) {
    return Object.keys(weights).map(function (m) { return m + ":" + weights[m]; }).join(",");
  }

  function sameWeights(a, b) {
    return Object.keys(a).every(function (k) { return Math.abs(a[k] - b[k]) < 1e-12; });
  }

  function query() {
    var q = "?weights=" + encodeURIComponent(weightsQuery(currentWeights()));
    var datasets = currentDatasetWeights();
    if (!sameWeights(datasets, data.owner_dataset_weights)) {
      q += "&dataset_weights=" + encodeURIComponent(weightsQuery(datasets));
    }
    return q;
  }

  function rerank(changed) {
    var weights = currentWeights();
    sliders.forEach(function (s) {
      document.getElementById("o-" + s.dataset.metric).textContent = s.value;
    });
    var total = Object.keys(weights).reduce(function (t, m) { return t + weights[m]; }, 0);
    if (!(total > 0)) {
      note.textContent = "Give at least one metric a weight above 0.";
      return;
    }
    note.textContent = "";
    var keys = Object.keys(data.table);
    if (!tbody || keys.length === 0) return;
    var order = Dynascore.floorOrder(
      Dynascore.rank(data.table, weights, data.directions, data.offsets, data.perf), data.flagged);
    var scores = Dynascore.compute(data.table, weights, data.directions, data.offsets, data.perf);
    var rows = {};
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-key]"), function (tr) {
      rows[tr.dataset.key] = tr;
    });
    order.forEach(function (key, i) {
      var tr = rows[key];
      tr.querySelector(".rank").textContent = String(i + 1);
      tr.querySelector(".ds-value").textContent = format(scores[key]);
      // Intervals, P(first) and contributions were computed for the weights the page
      // was loaded with; hide them once the weights change.
      Array.prototype.forEach.call(tr.querySelectorAll(".stale-able"), function (el) {
        el.hidden = changed;
      });
      tbody.appendChild(tr);
    });
    if (staleNote) staleNote.hidden = !changed;
    var leader = rows[order[0]];
    if (announce && leader) {
      // Screen readers hear the new order's head; sighted users see the rows move.
      var name = leader.querySelector("td.name a") || leader.querySelector("td.name");
      announce.textContent = "Re-ranked: " + name.textContent.trim() +
        " is first, Dynascore " + format(scores[order[0]]) + ".";
    }
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-kind=majority]"), function (tr) {
      tbody.appendChild(tr);
    });
    var q = query();
    document.getElementById("dl-csv").href = "/tasks/" + data.task + "/leaderboard.csv" + q;
    document.getElementById("dl-json").href = "/tasks/" + data.task + "/leaderboard.json" + q;
    Array.prototype.forEach.call(tbody.querySelectorAll("td.name a"), function (a) {
      a.href = a.pathname + q;
    });
    if (changed && window.history && history.replaceState) {
      history.replaceState(null, "", window.location.pathname + q);
    }
  }

  sliders.forEach(function (s) {
    s.addEventListener("input", function () { rerank(true); });
  });
  datasetSliders.forEach(function (s, i) {
    var out = document.getElementById("dwo-" + (i + 1));
    s.addEventListener("input", function () { out.textContent = parseFloat(s.value).toPrecision(3); });
    s.addEventListener("change", function () {
      if (!(Object.values(currentDatasetWeights()).some(function (w) { return w > 0; }))) {
        note.textContent = "Give at least one dataset a weight above 0.";
        return;
      }
      window.location.assign(window.location.pathname + query());
    });
  });
  document.getElementById("reset-weights").addEventListener("click", function () {
    // The owner's weights, not a shared URL's. Intervals were computed for the weights the
    // page loaded with: when those were not the owner's, load the plain page for its own.
    if (!sameWeights(currentDatasetWeights(), data.owner_dataset_weights) ||
        !sameWeights(loaded, data.owner_weights)) {
      window.location.assign(window.location.pathname);
      return;
    }
    sliders.forEach(function (s) { s.value = data.owner_weights[s.dataset.metric]; });
    rerank(false);
    if (window.history && history.replaceState) history.replaceState(null, "", window.location.pathname);
  });
})();

/* The task page: re-rank the table in the browser as the weight sliders move.
 * The formula is static/dynascore.js (the same as the server's); the table data, the
 * directions and the offsets come from the page (#board-data). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("board-data").textContent);
  var tbody = document.querySelector("#board tbody");
  var sliders = Array.prototype.slice.call(document.querySelectorAll("input[type=range][data-metric]"));
  var note = document.getElementById("weights-note");
  var initial = {};
  sliders.forEach(function (s) { initial[s.dataset.metric] = s.value; });

  function format(v) {
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : v.toFixed(2);
  }

  function currentWeights() {
    var weights = {};
    sliders.forEach(function (s) { weights[s.dataset.metric] = parseFloat(s.value); });
    return weights;
  }

  function weightsQuery(weights) {
    return Object.keys(weights).map(function (m) { return m + ":" + weights[m]; }).join(",");
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
    var order = Dynascore.rank(data.table, weights, data.directions, data.offsets, data.perf);
    var scores = Dynascore.compute(data.table, weights, data.directions, data.offsets, data.perf);
    var rows = {};
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-key]"), function (tr) {
      rows[tr.dataset.key] = tr;
    });
    order.forEach(function (key, i) {
      var tr = rows[key];
      tr.querySelector(".rank").textContent = String(i + 1);
      tr.querySelector(".ds-value").textContent = format(scores[key]);
      // Intervals were computed for the owner's weights; hide them once weights change.
      tr.querySelector(".ds-iv").hidden = changed;
      tbody.appendChild(tr);
    });
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-kind=majority]"), function (tr) {
      tbody.appendChild(tr);
    });
    var query = "?weights=" + encodeURIComponent(weightsQuery(weights));
    document.getElementById("dl-csv").href = "/tasks/" + data.task + "/leaderboard.csv" + query;
    document.getElementById("dl-json").href = "/tasks/" + data.task + "/leaderboard.json" + query;
    Array.prototype.forEach.call(tbody.querySelectorAll("td.name a"), function (a) {
      a.href = a.pathname + query;
    });
    if (changed && window.history && history.replaceState) {
      history.replaceState(null, "", window.location.pathname + query);
    }
  }

  sliders.forEach(function (s) {
    s.addEventListener("input", function () { rerank(true); });
  });
  document.getElementById("reset-weights").addEventListener("click", function () {
    sliders.forEach(function (s) { s.value = initial[s.dataset.metric]; });
    rerank(false);
  });
})();

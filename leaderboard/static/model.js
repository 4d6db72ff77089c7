/* The model and drift pages: draw the charts (#charts-data); submit the drill-down form on change.
 * Kept out of the page so that the CSP allows scripts from this origin only. */
(function () {
  "use strict";
  var data = document.getElementById("charts-data");
  var charts = data ? JSON.parse(data.textContent) : {};
  Object.keys(charts).forEach(function (name) {
    var el = document.getElementById("chart-" + name);
    if (el) Plotly.newPlot(el, charts[name].data, charts[name].layout, {responsive: true, displaylogo: false});
  });
  Array.prototype.forEach.call(document.querySelectorAll("[data-autosubmit]"), function (input) {
    input.addEventListener("change", function () { input.form.submit(); });
  });
})();

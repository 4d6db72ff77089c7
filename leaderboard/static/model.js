/* The model page (the lineage and drift pages use it for their charts alone). The charts
 * (#charts-data) are drawn by plotly.js's basic bundle, loaded after the page itself
 * (DOMContentLoaded does not wait for it). The drill-down's dataset, search, order and
 * pages are asked of .../examples and swapped in: no reload, so the keyboard stays where it was and the address keeps the weights. Kept out of the page so
 * that the CSP allows scripts from this origin only. */
(function () {
  "use strict";
  var PLOTLY = "/static/vendor/plotly-basic.min.js";
  var NARROW = "(max-width: 600px), (hover: none)";

  function drawCharts() {
    var data = document.getElementById("charts-data");
    var charts = data ? JSON.parse(data.textContent) : {};
    // On a phone the toolbar would sit on the chart's title, and there is nothing to hover.
    var config = { responsive: true, displaylogo: false, displayModeBar: !window.matchMedia(NARROW).matches };
    Object.keys(charts).forEach(function (name) {
      var el = document.getElementById("chart-" + name);
      if (!el) return;
      el.textContent = "";
      Plotly.newPlot(el, charts[name].data, charts[name].layout, config);
    });
  }

  function loadCharts() {
    if (!document.getElementById("charts-data")) return;
    var script = document.createElement("script");
    script.src = PLOTLY;
    script.onload = drawCharts;
    document.body.appendChild(script);
  }

  var box = document.getElementById("examples");
  var announce = document.getElementById("examples-announce");
  var asked = 0;

  function show(params) {
    var number = ++asked;
    var query = params.toString();
    box.setAttribute("aria-busy", "true");
    var focused = document.activeElement && box.contains(document.activeElement) ?
      (document.activeElement.id || (document.activeElement.getAttribute("rel") && "a[rel=" + document.activeElement.getAttribute("rel") + "]")) : null;
    fetch(window.location.pathname + "/examples?" + query, { credentials: "same-origin" })
      .then(function (response) {
        return response.text().then(function (text) { return { ok: response.ok, text: text }; });
      })
      .then(function (answer) {
        if (number !== asked) return;
        box.removeAttribute("aria-busy");
        if (!answer.ok) {
          announce.textContent = "The examples could not be loaded: reload the page.";
          return;
        }
        box.innerHTML = answer.text;
        history.replaceState(null, "", window.location.pathname + "?" + query);
        if (focused) {
          var again = box.querySelector(focused.charAt(0) === "a" ? focused : "#" + focused);
          if (again) again.focus();
        }
        var count = document.getElementById("examples-count");
        announce.textContent = count ? count.textContent.trim() : "";
      })
      .catch(function () {
        if (number !== asked) return;
        box.removeAttribute("aria-busy");
        announce.textContent = "The server could not be reached: reload the page.";
      });
  }

  /* The address's parameters (the weights among them) with the form's. */
  function fromForm(form) {
    var params = new URLSearchParams(window.location.search);
    ["dataset", "q", "sort", "wrong_only", "offset"].forEach(function (name) { params.delete(name); });
    new FormData(form).forEach(function (value, name) {
      if (value !== "" && !params.has(name)) params.append(name, value);
    });
    return params;
  }

  if (box) {
    box.addEventListener("change", function (event) {
      var form = event.target.form;
      if (form && form.id === "examples-form" && event.target.type !== "search") show(fromForm(form));
    });
    box.addEventListener("submit", function (event) {
      if (event.target.id !== "examples-form") return;
      event.preventDefault();
      show(fromForm(event.target));
    });
    box.addEventListener("click", function (event) {
      var link = event.target.closest && event.target.closest("a[data-examples-link]");
      if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      show(new URL(link.href).searchParams);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", loadCharts);
  } else {
    loadCharts();
  }
})();

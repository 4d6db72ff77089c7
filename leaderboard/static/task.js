/* The task page. While a weight slider moves, the table re-ranks in the browser
 * (static/dynascore.js, the server's formula) and the interval figures are marked stale;
 * when it is released, the server's ranking for the new weights - intervals, rank
 * intervals and P(first) recomputed - replaces the #ranking section
 * (/ui/tasks/T/ranking). Sorting, searching, paging and filtering do the same, so
 * every change keeps the others (weights, search, order, filters, columns) and the
 * address always reloads to what is shown. The table's data, directions and offsets come
 * from the server (#board-data); this file has no copy of the metric table. A large
 * board's section may come before its intervals (#intervals-pending): it is asked for
 * again, a little later each time, until they are in. */
(function () {
  "use strict";
  var section = document.getElementById("ranking");
  var sliders = Array.prototype.slice.call(document.querySelectorAll("input[type=range][data-metric]"));
  var datasetSliders = Array.prototype.slice.call(
    document.querySelectorAll("input[type=range][data-dataset]"));
  var note = document.getElementById("weights-note");
  var announce = document.getElementById("rank-announce");
  var data = readData();
  var pending = null;
  var asked = 0;
  var intervalsTimer = null;
  var intervalsTries = 0;
  // About two minutes of asking: a 10,000-model board's intervals take seconds.
  var INTERVALS_WAITS_MS = [500, 1000, 1000, 2000, 2000, 3000];
  var INTERVALS_TRIES = 50;

  function readData() {
    return JSON.parse(document.getElementById("board-data").textContent);
  }

  function format(v) {
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : v.toFixed(2);
  }

  function values(list, key) {
    var weights = {};
    list.forEach(function (s) { weights[s.dataset[key]] = parseFloat(s.value); });
    return weights;
  }

  function weightsText(weights) {
    return Object.keys(weights).map(function (m) { return m + ":" + weights[m]; }).join(",");
  }

  function same(a, b) {
    return Object.keys(a).every(function (k) { return Math.abs(a[k] - b[k]) < 1e-12; });
  }

  /* The address's parameters with the sliders' weights (none: the owner's). */
  function withWeights(params) {
    var weights = values(sliders, "metric"), datasets = values(datasetSliders, "dataset");
    var owners = same(weights, data.owner_weights) && same(datasets, data.owner_dataset_weights);
    params.delete("weights");
    params.delete("dataset_weights");
    if (!owners) params.set("weights", weightsText(weights));
    if (!same(datasets, data.owner_dataset_weights)) {
      params.set("dataset_weights", weightsText(datasets));
    }
    // The columns chosen since the section was drawn (its links carry the older choice).
    var hide = new URLSearchParams(window.location.search).get("hide");
    if (hide) params.set("hide", hide); else params.delete("hide");
    return params;
  }

  /* Where the keyboard was inside the section, to put it back after a swap. */
  function focusKey() {
    var el = document.activeElement;
    if (!el || !section.contains(el)) return null;
    if (el.id) return "#" + el.id;
    if (el.dataset && el.dataset.focus) return "[data-focus='" + el.dataset.focus + "']";
    if (el.getAttribute("rel")) return "a[rel=" + el.getAttribute("rel") + "]";
    return null;
  }

  function leaderName(tbody) {
    var first = tbody && tbody.querySelector("tr[data-key]:not([data-kind=majority])");
    if (!first) return null;
    var name = first.querySelector("td.name a") || first.querySelector("td.name");
    return { name: name.textContent.trim(), score: first.querySelector(".ds-value").textContent };
  }

  function markStale(stale) {
    Array.prototype.forEach.call(section.querySelectorAll(".stale-able"), function (el) {
      el.hidden = stale;
    });
    var staleNote = document.getElementById("stale-note");
    if (staleNote) staleNote.hidden = !stale;
  }

  /* While the section says its intervals are being computed, ask for it again. */
  function awaitIntervals() {
    window.clearTimeout(intervalsTimer);
    if (!section.querySelector("[data-intervals-pending]")) {
      intervalsTries = 0;
      return;
    }
    if (intervalsTries >= INTERVALS_TRIES) {
      note.textContent = "The intervals are taking long to compute: reload the page later.";
      return;
    }
    var wait = INTERVALS_WAITS_MS[Math.min(intervalsTries, INTERVALS_WAITS_MS.length - 1)];
    intervalsTries += 1;
    intervalsTimer = window.setTimeout(function () {
      refresh(new URLSearchParams(window.location.search), "intervals");
    }, wait);
  }

  /* Ask the server for the ranking of `params` and put it in place. */
  function refresh(params, why) {
    window.clearTimeout(intervalsTimer);
    if (why !== "intervals") intervalsTries = 0;
    var number = ++asked;
    var query = params.toString();
    section.setAttribute("aria-busy", "true");
    fetch("/ui/tasks/" + data.task + "/ranking" + (query ? "?" + query : ""), {
      headers: { Accept: "text/html" }, credentials: "same-origin"
    }).then(function (response) {
      return response.text().then(function (text) { return { ok: response.ok, text: text }; });
    }).then(function (answer) {
      if (number !== asked) return; // a later change is on its way
      section.removeAttribute("aria-busy");
      if (!answer.ok) {
        note.textContent = "The server could not rank the board for this: reload the page.";
        return;
      }
      var focus = focusKey();
      section.innerHTML = answer.text;
      data = readData();
      var again = focus && section.querySelector(focus);
      if (again) again.focus();
      if (window.history && history.replaceState) {
        history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
      }
      var leader = leaderName(section.querySelector("#board tbody"));
      var range = document.getElementById("pager-range");
      var waiting = Boolean(section.querySelector("[data-intervals-pending]"));
      if (why === "intervals") {
        if (!waiting) announce.textContent = "Intervals computed.";
      } else {
        announce.textContent = (why === "weights" && leader ?
          "Re-ranked: " + leader.name + " is first, Dynascore " + leader.score + "." :
          (range ? range.textContent.trim() + "." : "")) +
          (why === "weights" ? (waiting ? " Intervals being computed." : " Intervals recomputed.") : "");
      }
      awaitIntervals();
    }).catch(function () {
      if (number !== asked) return;
      section.removeAttribute("aria-busy");
      note.textContent = "The server could not be reached: the intervals shown are for the " +
        "weights the page was loaded with. Reload to recompute them.";
    });
  }

  function refreshSoon() {
    window.clearTimeout(intervalsTimer);
    window.clearTimeout(pending);
    pending = window.setTimeout(function () {
      refresh(withWeights(new URLSearchParams(window.location.search)), "weights");
    }, 250);
  }

  /* The downloads and the models' pages follow the sliders at once. */
  function followLinks() {
    var only = withWeights(new URLSearchParams());
    only.delete("hide");
    var query = only.toString() ? "?" + only.toString() : "";
    ["csv", "json"].forEach(function (kind) {
      var a = document.getElementById("dl-" + kind);
      if (a) a.href = "/tasks/" + data.task + "/leaderboard." + kind + query;
    });
    Array.prototype.forEach.call(section.querySelectorAll("#board td.name a"), function (a) {
      a.href = a.pathname + query;
    });
  }

  /* The instant re-rank while a slider moves (the whole board only: see data.paged). */
  function rerank() {
    var weights = values(sliders, "metric");
    var tbody = section.querySelector("#board tbody");
    var keys = Object.keys(data.table);
    window.clearTimeout(intervalsTimer); // the weights move on: their own ranking is asked
    markStale(true);
    followLinks();
    if (data.paged || !tbody || keys.length === 0) return;
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
      tbody.appendChild(tr);
    });
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-kind=majority]"), function (tr) {
      tbody.appendChild(tr);
    });
  }

  function moved() {
    sliders.forEach(function (s) {
      document.getElementById("o-" + s.dataset.metric).textContent = s.value;
    });
    var total = Object.values(values(sliders, "metric")).reduce(function (t, w) { return t + w; }, 0);
    if (!(total > 0)) {
      note.textContent = "Give at least one metric a weight above 0.";
      return false;
    }
    note.textContent = "";
    return true;
  }

  sliders.forEach(function (s) {
    s.addEventListener("input", function () { if (moved()) rerank(); });
    s.addEventListener("change", function () { if (moved()) refreshSoon(); });
  });
  datasetSliders.forEach(function (s, i) {
    var out = document.getElementById("dwo-" + (i + 1));
    s.addEventListener("input", function () { out.textContent = parseFloat(s.value).toPrecision(3); });
    s.addEventListener("change", function () {
      if (!(Object.values(values(datasetSliders, "dataset")).some(function (w) { return w > 0; }))) {
        note.textContent = "Give at least one dataset a weight above 0.";
        return;
      }
      note.textContent = "";
      markStale(true);
      refreshSoon();
    });
  });

  document.getElementById("reset-weights").addEventListener("click", function () {
    // The owner's weights, not a shared URL's; the rest of the address stays.
    sliders.forEach(function (s) {
      s.value = data.owner_weights[s.dataset.metric];
      document.getElementById("o-" + s.dataset.metric).textContent = s.value;
    });
    datasetSliders.forEach(function (s, i) {
      s.value = data.owner_dataset_weights[s.dataset.dataset];
      document.getElementById("dwo-" + (i + 1)).textContent = parseFloat(s.value).toPrecision(3);
    });
    note.textContent = "";
    var params = withWeights(new URLSearchParams(window.location.search));
    var query = params.toString();
    if (window.history && history.replaceState) {
      history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
    }
    rerank();
    refresh(params, "weights");
  });

  awaitIntervals();

  // Sort links, pages, "show every model": the server's order for the sliders' weights.
  section.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-board-link]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    refresh(withWeights(new URL(link.href).searchParams), "view");
  });
  // The search and the filters: the form's fields replace theirs in the address.
  section.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-board-form]");
    if (!form) return;
    event.preventDefault();
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (value !== "") params.append(name, value);
    });
    refresh(withWeights(params), "view");
  });
  // The column chooser: shown or hidden at once, remembered in the address.
  section.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("input[data-col-toggle]")) return;
    var name = box.dataset.colToggle;
    Array.prototype.forEach.call(section.querySelectorAll("[data-col='" + name + "']"), function (el) {
      el.classList.toggle("col-hidden", !box.checked);
    });
    var hidden = Array.prototype.filter.call(
      section.querySelectorAll("input[data-col-toggle]"), function (b) { return !b.checked; }
    ).map(function (b) { return b.dataset.colToggle; });
    var params = new URLSearchParams(window.location.search);
    if (hidden.length) params.set("hide", hidden.join(",")); else params.delete("hide");
    var query = params.toString();
    history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
    announce.textContent = (box.checked ? "Showing " : "Hiding ") + box.parentNode.textContent.trim() + ".";
  });
})();

/* The submission page: while jobs run, read GET /submissions/{id} (JSON) every few seconds
 * and update each job card in place. Nothing reloads, so an open "Last log lines" panel
 * stays open and its scroll position is kept. Cards are matched by position and dataset
 * name (the API's order is the page's); if they ever differ, the page loads again. */
(function () {
  "use strict";
  var jobs = document.getElementById("jobs");
  if (!jobs || jobs.dataset.active !== "true") return;
  var id = jobs.dataset.submission;
  var live = JSON.parse(document.getElementById("submission-live").textContent);
  var metrics = live.metrics;
  var FINAL = live.final;  // JobStatus.is_final, from the page
  var PERIOD_MS = 3000;

  function num(v) {  // the num() macro of _macros.html
    var a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : v.toFixed(2);
  }

  function examplesDone(job) {  // as submission.html writes it
    if (job.examples_total) return (job.examples_done || 0) + " of " + job.examples_total + " examples";
    if (job.status === "queued") return "waiting for a worker";
    if (job.status === "building") return "starting the model";
    return "";
  }

  function setStatus(el, status) {
    el.className = "status " + status;
    el.textContent = status;
  }

  function child(card, selector, make) {
    var el = card.querySelector(selector);
    if (!el) {
      el = make();
      card.appendChild(el);
    }
    return el;
  }

  function updateCard(card, job) {
    card.className = "job " + job.status;
    setStatus(card.querySelector("header .status"), job.status);
    card.querySelector("header .reason").textContent = job.reason || "";
    var bar = card.querySelector("progress");
    bar.value = job.progress;
    bar.textContent = Math.round(job.progress * 100) + "%";
    card.querySelector(".examples-done").textContent = examplesDone(job);
    if (job.metrics && !card.querySelector(".job-metrics")) {
      var line = document.createElement("p");
      line.className = "small job-metrics";
      metrics.filter(function (m) { return job.metrics[m.field] != null; }).forEach(function (m, i) {
        if (i) line.appendChild(document.createTextNode(" · "));
        var span = document.createElement("span");
        span.title = m.label + " (" + m.unit + "), " + m.direction + " is better";
        span.textContent = m.name + " " + num(job.metrics[m.field]);
        line.appendChild(span);
      });
      card.insertBefore(line, bar.nextSibling);
    }
    if (job.message) {
      child(card, ".error-message", function () {
        var p = document.createElement("p");
        p.className = "error-message";
        return p;
      }).textContent = job.message;
    }
    if (job.log_tail) {
      var pre = child(card, "details", function () {
        var details = document.createElement("details");
        var summary = document.createElement("summary");
        summary.textContent = "Last log lines";
        var log = document.createElement("pre");
        log.className = "log";
        details.appendChild(summary);
        details.appendChild(log);
        return details;
      }).querySelector("pre");
      if (pre.textContent !== job.log_tail) pre.textContent = job.log_tail;
    }
  }

  function apply(status) {
    var cards = jobs.querySelectorAll("article.job");
    var same = cards.length === status.jobs.length && status.jobs.every(function (job, i) {
      return cards[i].dataset.dataset === job.dataset;
    });
    if (!same) {
      window.location.reload();
      return false;
    }
    status.jobs.forEach(function (job, i) { updateCard(cards[i], job); });
    setStatus(document.getElementById("submission-status"), status.status);
    var active = status.jobs.some(function (job) { return FINAL.indexOf(job.status) < 0; });
    if (!active) {
      jobs.dataset.active = "false";
      var cancel = document.getElementById("cancel-form");
      if (cancel) cancel.remove();  // nothing is left to cancel
      var note = document.getElementById("live-note");
      if (note) note.remove();
    }
    return active;
  }

  function poll() {
    fetch("/submissions/" + id, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.json();
      })
      .then(function (status) { if (apply(status)) window.setTimeout(poll, PERIOD_MS); })
      .catch(function () { window.setTimeout(poll, PERIOD_MS * 3); });  // try again, slower
  }

  window.setTimeout(poll, PERIOD_MS);
})();

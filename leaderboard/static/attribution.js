/* Word attributions: ask the server (POST, with the session's CSRF token) and draw each
 * word of the input with its score. Every [data-attribution-url] panel asks on a click of
 * its button, or at once when it has data-auto. The score is written out for screen
 * readers and in each word's tooltip; strength and direction are also drawn as underline
 * thickness and style, so colour is never the only cue. */
(function () {
  "use strict";

  function strength(score) {
    var size = Math.abs(score);
    if (size >= 0.4) return 4;
    if (size >= 0.2) return 3;
    if (size >= 0.1) return 2;
    if (size >= 0.02) return 1;
    return 0;
  }

  function signed(score) {
    return (score > 0 ? "+" : score < 0 ? "\u2212" : "") + Math.abs(score).toFixed(2);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function describe(score, classification, answer) {
    if (!classification) return score > 0 ? "removing it changed the answer" : "no effect";
    if (score > 0) return "for \u201c" + answer + "\u201d";
    if (score < 0) return "against \u201c" + answer + "\u201d";
    return "no effect";
  }

  function word(w, classification, answer) {
    var level = strength(w.score);
    var span = el("span", "attr-word", w.text);
    if (level > 0) {
      span.className += " attr-s" + level + (w.score > 0 ? " attr-for" : " attr-against");
    }
    var said = signed(w.score) + ", " + describe(w.score, classification, answer);
    span.title = said;
    span.appendChild(el("span", "visually-hidden", " (" + said + ")"));
    return span;
  }

  function field(f, classification, answer) {
    var line = el("p", "attr-field");
    line.appendChild(el("span", "muted", f.name + ": "));
    var at = 0;
    f.words.forEach(function (w) {
      if (w.start > at) line.appendChild(document.createTextNode(f.text.slice(at, w.start)));
      line.appendChild(word(w, classification, answer));
      at = w.end;
    });
    if (at < f.text.length) line.appendChild(document.createTextNode(f.text.slice(at)));
    return line;
  }

  function render(body, data) {
    body.textContent = "";
    var classification = data.output === "multiclass";
    var answer = String(data.prediction);
    var head = el("p", "attr-head");
    head.appendChild(document.createTextNode("Which words moved the answer "));
    head.appendChild(el("strong", "", answer));
    if (data.probability !== null && data.probability !== undefined) {
      head.appendChild(document.createTextNode(" (probability " + data.probability.toFixed(2) + ")"));
    }
    head.appendChild(document.createTextNode(":"));
    body.appendChild(head);
    data.fields.forEach(function (f) { body.appendChild(field(f, classification, answer)); });
    var all = [];
    data.fields.forEach(function (f) { f.words.forEach(function (w) { all.push(w); }); });
    all.sort(function (a, b) { return Math.abs(b.score) - Math.abs(a.score); });
    var top = all.filter(function (w) { return strength(w.score) > 0; }).slice(0, 5);
    if (top.length) {
      body.appendChild(el("p", "small", "Mattered most:"));
      var list = el("ol", "attr-top");
      top.forEach(function (w) {
        list.appendChild(el("li", "", w.text + " " + signed(w.score) + " (" +
          describe(w.score, classification, answer) + ")"));
      });
      body.appendChild(list);
    } else {
      body.appendChild(el("p", "small", "Removing any one word leaves the answer as it is."));
    }
    body.appendChild(el("p", "muted attr-legend",
      "Score: " + data.rule + "; solid underline: for the answer, dotted: against it, " +
      "thicker: stronger. " + data.variants + " inputs answered by the model" +
      (data.cached ? " (kept from an earlier request)." : ".")));
  }

  function ask(panel) {
    var body = panel.querySelector(".attribution-body");
    body.textContent = "Asking the model about each word\u2026";
    var uid = panel.getAttribute("data-uid");
    fetch(panel.getAttribute("data-attribution-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "X-CSRF-Token": panel.getAttribute("data-csrf")
      },
      body: JSON.stringify(uid === null ? {} : {uid: uid})
    }).then(function (response) {
      return response.json().then(function (data) { return {ok: response.ok, data: data}; });
    }).then(function (answer) {
      if (answer.ok) {
        render(body, answer.data);
        panel.setAttribute("data-done", "");
      } else {
        body.textContent = "";
        body.appendChild(el("p", "flash error", String(answer.data.detail || "The request failed.")))
          .setAttribute("role", "alert");
      }
    }).catch(function () {
      body.textContent = "The server could not be reached; try again.";
    });
  }

  // One listener for the document: the model page swaps its drill-down in without a
  // reload, and the panels it brings must answer a click too.
  document.addEventListener("click", function (event) {
    var start = event.target.closest && event.target.closest("[data-attribution-start]");
    var panel = start && start.closest("[data-attribution-url]");
    if (panel) ask(panel);
  });
  Array.prototype.forEach.call(document.querySelectorAll("[data-attribution-url][data-auto]"), ask);
})();

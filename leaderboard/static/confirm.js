/* Forms whose action cannot be undone carry data-confirm="question": the browser asks it
 * first, and the form is sent only on OK. (No inline handlers: the CSP allows none.) */
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form && form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();

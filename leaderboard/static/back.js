/* "Back" on the error page: the browser's own back where there is one, which restores the
 * page as it was (a form keeps what was typed); the link's href otherwise. */
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("a[data-history-back]"), function (a) {
    a.addEventListener("click", function (event) {
      if (window.history.length > 1) {
        event.preventDefault();
        window.history.back();
      }
    });
  });
})();

/* The compare page's picker: at most data-max models may be ticked; the others are
 * disabled, and a note says why. The server checks the choice again. */
(function () {
  "use strict";
  var form = document.getElementById("compare-picker");
  if (!form) return;
  var most = parseInt(form.getAttribute("data-max"), 10);
  var boxes = form.querySelectorAll("input[type=checkbox][name=m]");
  var note = document.getElementById("picker-note");
  function update() {
    var ticked = Array.prototype.filter.call(boxes, function (b) { return b.checked; }).length;
    Array.prototype.forEach.call(boxes, function (b) { b.disabled = !b.checked && ticked >= most; });
    note.textContent = ticked >= most ? "At most " + most + " models: untick one to choose another." : "";
  }
  Array.prototype.forEach.call(boxes, function (b) { b.addEventListener("change", update); });
  update();
})();

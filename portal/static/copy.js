// Copy buttons: a button with data-copy="ID" copies the text of the element with that id.
// An external file, so the pages' Content-Security-Policy needs no 'unsafe-inline'.
document.querySelectorAll("[data-copy]").forEach(function (b) {
  b.addEventListener("click", function () {
    var el = document.getElementById(b.dataset.copy);
    if (!el || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(el.textContent).then(function () { b.textContent = "Copied"; });
  });
});

// The upload page: a results file dropped on the zone (or chosen) is named under it.
(function () {
  "use strict";
  const zone = document.getElementById("dropzone");
  if (!zone) { return; }
  const input = zone.querySelector("input[type=file]");
  const chosen = document.getElementById("chosen-file");
  const show = () => { chosen.textContent = input.files.length ? "Chosen: " + input.files[0].name : ""; };
  input.addEventListener("change", show);
  ["dragenter", "dragover"].forEach(name => zone.addEventListener(name, event => {
    event.preventDefault(); zone.classList.add("over");
  }));
  ["dragleave", "drop"].forEach(name => zone.addEventListener(name, () => zone.classList.remove("over")));
  zone.addEventListener("drop", event => { event.preventDefault(); input.files = event.dataTransfer.files; show(); });
})();

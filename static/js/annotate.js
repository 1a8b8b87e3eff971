// The annotation page, keyboard first: rating mode, number keys rate the marked dimension and move
// on, Backspace goes back, Enter sends once every dimension has a value; arena mode, 1/←, 2/↓ and
// 3/→ choose; S skips. Without script the form still works with the mouse or by tapping.
(function () {
  "use strict";
  const form = document.getElementById("annotation");
  if (!form) { return; }
  const mode = form.dataset.mode;
  const sets = Array.from(form.querySelectorAll("fieldset.dimension"));
  let current = 0;
  const mark = () => sets.forEach((set, index) => set.classList.toggle("current", index === current));
  const press = (button) => { if (button) { form.requestSubmit(button); } };
  const skip = form.querySelector("button[name=skip]");
  mark();
  sets.forEach((set, index) => set.addEventListener("change", () => {
    current = Math.min(index + 1, sets.length - 1); mark();
  }));
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    const key = event.key;
    if (key === "s" || key === "S") { event.preventDefault(); press(skip); return; }
    if (mode === "arena") {
      const value = { "1": "left", "ArrowLeft": "left", "2": "tie", "ArrowDown": "tie", "t": "tie", "3": "right", "ArrowRight": "right" }[key];
      if (value) { event.preventDefault(); press(form.querySelector(`button[name=winner][value=${value}]`)); }
      return;
    }
    if (/^[0-9]$/.test(key) && sets.length) {
      const radio = sets[current].querySelector(`input[value="${key}"]`);
      if (radio) {
        event.preventDefault();
        radio.checked = true;
        current = Math.min(current + 1, sets.length - 1);
        mark();
      }
      return;
    }
    if (key === "Backspace" && sets.length) {
      event.preventDefault();
      const filled = sets[current].querySelector("input:checked");
      if (filled) { filled.checked = false; } else if (current > 0) { current -= 1; const back = sets[current].querySelector("input:checked"); if (back) { back.checked = false; } }
      mark();
      return;
    }
    if (key === "Enter") {
      if (event.target instanceof HTMLButtonElement) { return; }  // Enter on a focused button presses it
      event.preventDefault();
      const empty = sets.findIndex((set) => !set.querySelector("input:checked"));
      if (empty === -1) { press(document.getElementById("send")); } else { current = empty; mark(); }
    }
  });
})();

// Learn page: the arrow keys click Back and Next (see learn_steps.arrow_keys).
export default function ({ parentElement }) {
  const doc = parentElement.ownerDocument;
  if (doc.__sinkscopeLearnKeys) return;
  doc.__sinkscopeLearnKeys = true;
  // Widgets that use the arrow keys themselves keep them.
  const own = 'input, textarea, select, [contenteditable="true"], [role="slider"], ' +
    '[role="radio"], [role="radiogroup"], [role="tab"], [role="listbox"], ' +
    '[role="combobox"], [role="option"], [role="spinbutton"], [role="menu"]';
  doc.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
    const focus = doc.activeElement;
    if (focus && focus.closest && focus.closest(own)) return;
    const key = ev.key === "ArrowLeft" ? "learn_back" : "learn_next";
    const button = doc.querySelector(`.st-key-${key} button`);
    if (button && !button.disabled) {
      ev.preventDefault();
      button.click();
    }
  });
}

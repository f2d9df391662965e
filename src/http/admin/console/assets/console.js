// The console's progressive enhancement: every page works without this script; with it, secrets
// copy in one click, dangerous buttons ask first, filters apply on change and prompt lists reorder.
document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});

document.addEventListener('change', (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.dataset.autosubmit !== undefined) field.form?.requestSubmit();
});

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[type="button"]') : null;
  if (!button) return;
  if (button.dataset.copy) {
    const input = document.getElementById(button.dataset.copy);
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Press Ctrl+C';
    }
    return;
  }
  const row = button.closest('li');
  if (button.dataset.move === 'up' && row?.previousElementSibling) row.after(row.previousElementSibling);
  if (button.dataset.move === 'down' && row?.nextElementSibling) row.before(row.nextElementSibling);
  if (button.dataset.remove !== undefined && row) row.remove();
  if (button.dataset.addRow !== undefined) {
    const list = button.form.querySelector('[data-prompt-list]');
    const blank = list.lastElementChild.cloneNode(true);
    blank.querySelector('input').value = '';
    list.append(blank);
    blank.querySelector('input').focus();
  }
});

// The row tools and the "add" button need this script: shown only when it runs.
for (const hidden of document.querySelectorAll('.row-tools[hidden], [data-add-row][hidden]')) hidden.hidden = false;

// The portal's progressive enhancement: every page works without this script; with it, filters
// apply on change and a payment request still waiting for its first attempt refreshes itself.
document.addEventListener('change', (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.dataset.autosubmit !== undefined) field.form?.requestSubmit();
});

const waiting = document.querySelector('[data-refresh-seconds]');
if (waiting) setTimeout(() => window.location.reload(), Number(waiting.dataset.refreshSeconds) * 1000);

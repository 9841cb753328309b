// One script for every page; the body's data-page says which one this is.
document.addEventListener('DOMContentLoaded', () => {
  const page = document.body.dataset.page;
  if (page === 'landing') landing.start();
  else if (page === 'console') consoleApp.start();
});

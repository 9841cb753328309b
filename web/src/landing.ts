// The catalog page: the language switch (remembered in localStorage and a
// cookie the server reads, so the next visit renders in it at once), the
// carousel's buttons, copy buttons, and the gateway's own address in the hint.
namespace landing {
  const KEY = 'tollgate.lang';

  function remember(lang: string): void {
    try {
      localStorage.setItem(KEY, lang);
    } catch {
      /* storage disabled: the cookie still remembers */
    }
    document.cookie = `lang=${lang}; Path=/; Max-Age=31536000; SameSite=Lax`;
  }

  export function start(): void {
    const current = document.documentElement.lang;
    let stored: string | null = null;
    try {
      stored = localStorage.getItem(KEY);
    } catch {
      stored = null;
    }
    if ((stored === 'en' || stored === 'ru') && stored !== current && !/[?&]lang=/.test(location.search)) {
      remember(stored);
      location.replace('/?lang=' + stored);
      return;
    }
    document.querySelectorAll<HTMLButtonElement>('button.lang').forEach((b) =>
      b.addEventListener('click', () => {
        const lang = b.dataset.lang!;
        remember(lang);
        if (lang !== current) location.assign('/?lang=' + lang);
      }),
    );
    const slides = ui.$('#slides');
    const step = (dir: number) => {
      if (slides === null) return;
      const first = slides.firstElementChild as HTMLElement | null;
      slides.scrollBy({ left: dir * (first?.offsetWidth ?? 300), behavior: 'smooth' });
    };
    ui.$('.carousel .prev')?.addEventListener('click', () => step(-1));
    ui.$('.carousel .next')?.addEventListener('click', () => step(1));
    const hint = ui.$('#set-url');
    if (hint !== null) hint.append(' ', ui.h('code', {}, `export TOLLGATE_URL=${location.origin}`));
    ui.wireCopyButtons();
  }
}

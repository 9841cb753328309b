// The language switch of every page (the catalog and the consoles): the
// server renders the page in the language it chose (?lang=, the `lang`
// cookie, Accept-Language); the switch remembers a choice in localStorage and
// in that cookie, so the next visit renders in it at once.
namespace langSwitch {
  const KEY = 'tollgate.lang';

  function remember(lang: string): void {
    try {
      localStorage.setItem(KEY, lang);
    } catch {
      /* storage disabled: the cookie still remembers */
    }
    document.cookie = `lang=${lang}; Path=/; Max-Age=31536000; SameSite=Lax`;
  }

  /** This page in `lang`, keeping the console's screen (the hash). */
  function urlIn(lang: string): string {
    return `${location.pathname}?lang=${lang}${location.hash}`;
  }

  /**
   * Wires the switch's buttons. True when the page is being replaced by the
   * remembered language (a choice stored before the cookie existed, or a
   * cookie cleared): the caller draws nothing then.
   */
  export function start(): boolean {
    const current = document.documentElement.lang;
    let stored: string | null = null;
    try {
      stored = localStorage.getItem(KEY);
    } catch {
      stored = null;
    }
    if ((stored === 'en' || stored === 'ru') && stored !== current && !/[?&]lang=/.test(location.search)) {
      remember(stored);
      location.replace(urlIn(stored));
      return true;
    }
    document.querySelectorAll<HTMLButtonElement>('button.lang').forEach((b) =>
      b.addEventListener('click', () => {
        const lang = b.dataset.lang!;
        remember(lang);
        if (lang !== current) location.assign(urlIn(lang));
      }),
    );
    return false;
  }
}

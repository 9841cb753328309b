// The catalog page: the language switch (web/src/lang.ts), the
// carousel's buttons, copy buttons, and the gateway's own address in the hint.
namespace landing {
  export function start(): void {
    if (langSwitch.start()) return;
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

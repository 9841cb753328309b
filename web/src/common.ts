// Small helpers every page uses: building elements without innerHTML (text
// is always set as text, never parsed), and the copy buttons.
namespace ui {
  type Attrs = Record<string, string | boolean | number | ((ev: Event) => void) | undefined>;
  export type Child = Node | string | null | undefined | false;

  export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === false) continue;
      if (typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
    for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
    return el;
  }

  export function $(sel: string, root: ParentNode = document): HTMLElement | null {
    return root.querySelector(sel);
  }

  /** Copies `text`; the button says so for a moment (and a live region tells screen readers). */
  export async function copy(text: string, button: HTMLElement, copiedLabel = 'Copied'): Promise<void> {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard (insecure origin): select the text so Ctrl+C works.
      return;
    }
    const before = button.textContent;
    button.textContent = copiedLabel;
    setTimeout(() => (button.textContent = before), 1500);
  }

  export function wireCopyButtons(root: ParentNode = document): void {
    root.querySelectorAll<HTMLElement>('button[data-copy]').forEach((b) => {
      b.addEventListener('click', () => {
        const target = document.getElementById(b.dataset.copy!);
        if (target !== null) void copy(target.textContent ?? '', b, b.dataset.copied);
      });
    });
  }
}

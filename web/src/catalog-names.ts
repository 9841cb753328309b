// The public model list (GET /v1/models) as the console uses it: keys' scopes
// and usage rows name models and vendors by UUID; people read and choose them
// by name. Read once per page load.
namespace catalogNames {
  export interface Names {
    /** `price`: what the model costs, in the account currency, as a person reads it ('' when the list has none). */
    models: Array<{ id: string; name: string; label: string; price: string }>;
    modelName(id: string): string;
    modelId(name: string): string | undefined;
    vendorName(id: string): string;
  }

  let loaded: Promise<Names> | null = null;

  /**
   * The list's `pricing` (decimal strings in the account currency) as one line
   * in the page's language, as the catalog page writes it: per million input,
   * cached input and output tokens, then per image; only what the model charges.
   */
  function priceText(p: any): string {
    if (p === null || typeof p !== 'object') return '';
    const num = (v: unknown) => (i18n.lang === 'ru' ? String(v).replace('.', ',') : String(v));
    const cur = money.currency();
    const tokens = ([
      [i18n.t.priceIn, p.input_per_mtok],
      [i18n.t.priceCached, p.cached_input_per_mtok],
      [i18n.t.priceOut, p.output_per_mtok],
    ] as const).filter(([, v]) => typeof v === 'string');
    const parts: string[] = [];
    if (tokens.length > 0) parts.push(i18n.t.priceTokens(tokens.map(([label, v]) => `${label} ${num(v)}`).join(' · '), cur));
    if (typeof p.per_image === 'string') parts.push(i18n.t.priceImage(num(p.per_image), cur));
    return parts.join('; ');
  }

  export function get(): Promise<Names> {
    loaded ??= fetch('/v1/models', { credentials: 'omit' })
      .then((r) => r.json())
      .catch(() => ({ data: [] }))
      .then((list: any) => {
        const data: any[] = Array.isArray(list?.data) ? list.data : [];
        const ru = i18n.lang === 'ru';
        const byId = new Map<string, string>(data.map((m) => [m.model_id, m.id]));
        const byName = new Map<string, string>(data.map((m) => [m.id, m.model_id]));
        const vendors = new Map<string, string>(data.filter((m) => m.vendor?.id).map((m) => [m.vendor.id, ru ? m.vendor.display_name_ru : m.vendor.display_name_en]));
        return {
          models: data.map((m) => ({ id: m.model_id, name: m.id, label: (ru ? m.display_name_ru : m.display_name_en) ?? m.id, price: priceText(m.pricing) })),
          modelName: (id: string) => byId.get(id) ?? id,
          modelId: (name: string) => byName.get(name),
          vendorName: (id: string) => vendors.get(id) ?? id,
        };
      });
    return loaded;
  }
}

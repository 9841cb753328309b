// Which environment variables a supplier's credential may come from. A
// catalog names the variable (`credential_env`) and the gateway sends its
// value to the supplier's base_url, so a catalog free to name any variable
// could send the gateway's own secrets (ADMIN_TOKEN, DATABASE_URL) to a host
// of its choosing. Allowed: names that start with TOLLGATE_SUPPLIER_, and
// those the operator lists in suppliers.credential_env_allow — never one of
// the gateway's own settings, even when listed. Checked when a catalog is
// applied, and again before each upstream call (a catalog stored before this
// rule existed, or written to the store by hand).
import { ENV_SETTINGS } from '../config/load.js';

export const CREDENTIAL_ENV_PREFIX = 'TOLLGATE_SUPPLIER_';

/** The gateway's own configuration variables: never a supplier credential. */
const OWN_SETTINGS: ReadonlySet<string> = new Set(['TOLLGATE_CONFIG', ...ENV_SETTINGS.map(([env]) => env)]);

export class CredentialPolicy {
  private readonly allowed: ReadonlySet<string>;

  constructor(allowList: readonly string[]) {
    this.allowed = new Set(allowList);
  }

  allows(name: string): boolean {
    if (OWN_SETTINGS.has(name)) return false;
    return (name.length > CREDENTIAL_ENV_PREFIX.length && name.startsWith(CREDENTIAL_ENV_PREFIX)) || this.allowed.has(name);
  }

  /** Why `name` is refused, for the operator. */
  refusal(supplier: string, name: string): string {
    const why = OWN_SETTINGS.has(name)
      ? 'it is one of the gateway\'s own settings'
      : `credential variables must start with ${CREDENTIAL_ENV_PREFIX} or be listed in suppliers.credential_env_allow`;
    return `supplier ${supplier}: credential_env ${name} is refused: ${why}`;
  }
}

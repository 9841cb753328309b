// Scope: a whitelist on three axes (spec, "API key"). An absent axis allows
// every value; a key with none is unrestricted. The caller resolves an alias
// to its catalog model first, so a scope naming a model_id covers every name
// the model answers to, and the model's vendor is the catalog's, never a
// name the caller chose.
import type { CatalogModel, ModalityCode } from '../catalog/types.js';
import type { ApiKey } from './types.js';

export function scopeAllows(key: ApiKey, model: CatalogModel, modality: ModalityCode): boolean {
  const scope = key.scope;
  if (scope === null) return true;
  if (scope.modality_codes !== undefined && !scope.modality_codes.includes(modality)) return false;
  if (scope.model_ids !== undefined && !scope.model_ids.includes(model.modelId)) return false;
  if (scope.vendor_ids !== undefined && !scope.vendor_ids.includes(model.vendor.id)) return false;
  return true;
}

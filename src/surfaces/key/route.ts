// GET /v1/key: the identity echo of the presented key (Bearer only). Every
// refusal is the single 401 of the chat/responses envelope. A surface (what
// a caller asks); auth/ only says who the caller is.
import type { KeyAuthenticator } from '../../auth/authenticator.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Route } from '../../server/context.js';
import { sendJson } from '../../server/respond.js';

/** The answer names a credential: no cache may keep it. */
const NO_STORE = [['Cache-Control', 'no-store']] as const;

export function keyRoute(auth: KeyAuthenticator): Route {
  return {
    method: 'get',
    path: '/v1/key',
    surface: 'key',
    envelope: 'openai',
    readsBody: false,
    async handle(ctx) {
      const warm = await auth.lookup(ctx.authorization, ctx.xApiKey, 'bearer');
      if (warm === null) throw new GatewayError('invalid_api_key');
      ctx.orgId = warm.key.orgId;
      ctx.keyId = warm.key.id;
      sendJson(ctx, 200, warm.echo, NO_STORE);
    },
  };
}

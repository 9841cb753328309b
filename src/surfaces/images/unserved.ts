// Edits and variations of images are not served (spec, "What the service
// does" 7): their paths answer 404 not_found in the images envelope, as a
// path that does not exist, before any body is read or key looked at.
import { GatewayError } from '../../errors/gateway-error.js';
import type { Route } from '../../server/context.js';

export const UNSERVED_IMAGE_PATHS = ['/v1/images/edits', '/v1/images/variations'] as const;

export function unservedImageRoutes(): Route[] {
  return UNSERVED_IMAGE_PATHS.map((path) => ({
    method: 'post',
    path,
    surface: 'images',
    envelope: 'images',
    readsBody: false,
    handle: () => {
      throw new GatewayError('not_found');
    },
  }));
}

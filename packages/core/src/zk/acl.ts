/** ACLs in the library's own terms, converted to the wire client's at the edge. */
import { createHash } from 'node:crypto';
import type { AclEntry } from './types.js';

/** Everyone may do anything (ZooKeeper's OPEN_ACL_UNSAFE). */
export const OPEN_ACL: readonly AclEntry[] = [{ perms: 'rwcda', scheme: 'world', id: 'anyone' }];

/** Only the identities the creating session authenticated with (CREATOR_ALL_ACL). */
export const CREATOR_ACL: readonly AclEntry[] = [{ perms: 'rwcda', scheme: 'auth', id: '' }];

const PERM_BITS: Record<string, number> = { r: 1, w: 2, c: 4, d: 8, a: 16 };

/** Bit mask of a permission string such as `'rwcda'`. */
export function permissionBits(perms: string): number {
  let bits = 0;
  for (const ch of perms) {
    const bit = PERM_BITS[ch];
    if (bit === undefined) throw new TypeError(`unknown permission '${ch}' in '${perms}' (use r, w, c, d, a)`);
    bits |= bit;
  }
  return bits;
}

/** The `digest` scheme id of `user:password`: `user:base64(sha1(user:password))`. */
export function digestId(user: string, password: string): string {
  return `${user}:${createHash('sha1').update(`${user}:${password}`).digest('base64')}`;
}

/** Everything for the holder of a client certificate with this subject (`x509` scheme), e.g. `O=tenant-a,CN=worker`. */
export function x509Acl(subject: string, perms = 'rwcda'): AclEntry[] {
  return [{ perms, scheme: 'x509', id: subject }];
}

/** Everything for a SASL user (`sasl` scheme). */
export function saslAcl(user: string, perms = 'rwcda'): AclEntry[] {
  return [{ perms, scheme: 'sasl', id: user }];
}

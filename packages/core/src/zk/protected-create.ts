/**
 * A sequential create safe under connection loss: the node's name carries an
 * id unique to the call, so a create whose reply was lost finds its own node
 * (looking after a `sync`) instead of making a second one.
 */
import { randomBytes } from 'node:crypto';
import { isOutcomeUnknown, NoNodeError } from './errors.js';
import { lastSegment, parentOf } from './paths.js';
import { type RetryOptions, withRetry } from './retry.js';
import type { Stat } from './types.js';

/** Length of the per-request id protected sequential names carry. */
const PROTECT_ID_BYTES = 6;

/** What a protected create needs of its session. */
export interface ProtectedCreator {
  readonly sessionId: string;
  create(path: string, data?: Buffer, mode?: 'persistent_sequential' | 'ephemeral_sequential'): Promise<string>;
  sync(path: string): Promise<void>;
  getChildren(path: string): Promise<string[]>;
  exists(path: string): Promise<Stat | null>;
  delete(path: string, version?: number): Promise<void>;
}

/** Creates `<pathPrefix><id>-<sequence>` on `session`, retried under `retry`; resolves with the created path. */
export function createProtected(
  session: ProtectedCreator,
  pathPrefix: string,
  data: Buffer | undefined,
  mode: 'persistent_sequential' | 'ephemeral_sequential',
  retry?: RetryOptions,
): Promise<string> {
  const marker = `${lastSegment(pathPrefix)}${randomBytes(PROTECT_ID_BYTES).toString('hex')}-`;
  const parent = parentOf(pathPrefix);
  const base = parent === '/' ? '' : parent;
  const full = `${base}/${marker}`;
  // The server answering the look-up may be a follower behind the one that
  // applied the create (a new session after expiry may land anywhere):
  // sync first, or a missed node would be created a second time.
  // An ephemeral node is ours only while this session owns it: taking one an earlier session's
  // create left would hand one lock to two holders. Nor is it left: that session, given up by the
  // client after a long suspension, may live on the server for a while yet (the client's close
  // lost with the link), and its node would count beside the new one (a barrier member twice).
  // The marker makes it this call's: delete it, then create on this session.
  const findOwn = async () => {
    await session.sync(parent);
    const name = (await session.getChildren(parent)).find((n) => n.startsWith(marker));
    if (!name || mode !== 'ephemeral_sequential') return name;
    const path = `${base}/${name}`;
    const stat = await session.exists(path);
    if (!stat || stat.ephemeralOwner === session.sessionId) return stat ? name : undefined;
    await session.delete(path, stat.version).catch((err) => {
      if (!(err instanceof NoNodeError)) throw err;
    });
    return undefined;
  };
  // Any failed attempt may have created the node (a lost reply, or a session
  // that expired after the server applied the create): every retry looks for
  // it first, and only creates again when it is not there.
  return withRetry(async (attempt) => {
    if (attempt > 0) {
      const own = await findOwn();
      if (own) return `${base}/${own}`;
    }
    try {
      return await session.create(full, data, mode);
    } catch (err) {
      if (!isOutcomeUnknown(err)) throw err;
      const own = await findOwn();
      if (own) return `${base}/${own}`;
      throw err;
    }
  }, retry);
}

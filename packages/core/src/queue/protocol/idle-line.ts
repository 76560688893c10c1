/**
 * The idle line's nodes: an idle worker holds `idle/w-<session>-<seq>`
 * (EPHEMERAL_SEQUENTIAL; how the line is used: runtime/idle-line.ts). Names
 * start with the session id, so that a node this session left behind (a
 * reply lost) is known as its own and removed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NoNodeError, SessionClosedError, SessionExpiredError } from '../../zk/errors.js';
import type { ProtocolContext } from './context.js';

/** Pause between tries to delete a node of ours whose delete failed, ms. */
const REMOVE_RETRY_MS = 500;

/** The path of the line's node `name`. */
export function idleNodePath(store: ProtocolContext, name: string): string {
  return `${store.layout.idleDir}/${name}`;
}

/** What the names of this session's nodes start with. */
export function idleNodePrefix(store: ProtocolContext): string {
  return `w-${store.session.credentials().sessionId.toString('hex')}-`;
}

/** Joins the line at its end: resolves with the path of this session's new node. */
export async function joinIdleLine(store: ProtocolContext): Promise<string> {
  await store.ensureDir(store.layout.idleDir);
  return store.session.createProtected(idleNodePath(store, idleNodePrefix(store)), undefined, 'ephemeral_sequential');
}

/**
 * Deletes a node of ours, again and again after failures: one left behind
 * would hold up the line. Done when it is gone, or its session is.
 */
export async function leaveIdleLine(store: ProtocolContext, path: string): Promise<void> {
  const { session } = store;
  for (;;) {
    try {
      await session.retry(() => session.delete(path));
      return;
    } catch (err) {
      if (err instanceof NoNodeError || err instanceof SessionExpiredError || err instanceof SessionClosedError) return;
    }
    await sleep(REMOVE_RETRY_MS);
  }
}

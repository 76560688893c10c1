/**
 * What a LeaderElection does, step by step, published on the diagnostics
 * channel `zkq:election` (node:diagnostics_channel) for whoever must explain
 * an election afterwards (a fault soak, an operator's debug log): which node
 * a participant created, which predecessor it watches, what woke it, when it
 * was elected and when it left. Nothing is built while nobody subscribes.
 */
import { channel } from 'node:diagnostics_channel';

export const ELECTION_CHANNEL = 'zkq:election';

/** One step of one participant. */
export interface ElectionTrace {
  /** The election's path (in the session's namespace). */
  path: string;
  /** The participant's id. */
  id: string;
  /** Its session id in hex (as `Stat.ephemeralOwner`). */
  session: string;
  /**
   * joined, abandoned (a node created after a leave: deleted again), watch, woke, gone (the watched
   * node was already gone), proceed, elected, failed, sessionLost, left, leftover (a leave could not
   * delete the node), leftoverRemoved (deleted by a later join), joinFailed.
   */
  step: string;
  /** The participant's own node (a name under `path`). */
  node?: string | undefined;
  /** The predecessor watched. */
  watch?: string | undefined;
  /** What woke the participant (deleted, changed, reconnected, sessionLost). */
  event?: string | undefined;
  /** The error of a failed step: its code, or its name. */
  error?: string | undefined;
}

const electionChannel = channel(ELECTION_CHANNEL);

/** Publishes `make()` when someone listens. */
export function traceElection(make: () => ElectionTrace): void {
  if (electionChannel.hasSubscribers) electionChannel.publish(make());
}

/** An error as a trace shows it: its stable code when it has one. */
export function traceError(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof e?.code === 'string') return e.code;
  return `${typeof e?.name === 'string' ? e.name : 'Error'}: ${String(e?.message ?? err)}`;
}

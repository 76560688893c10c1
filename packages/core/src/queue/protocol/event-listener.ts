/**
 * Event listener registration: a QueueEvents (either front-end's) holds
 * `events/listeners/<id>` (EPHEMERAL) while it listens; every writer of the
 * queue logs events while that directory is not empty (../events.ts).
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { Session } from '../../zk/session.js';
import type { Watcher } from '../../zk/types.js';
import type { QueueLayout } from '../layout.js';

/**
 * Keeps a QueueEvents' EPHEMERAL `events/listeners/<id>` present: watches it
 * (through `watch`, which a WatchLoop re-arms) and creates it when missing.
 * When the queue was obliterated, nothing is re-created here (that would
 * leave a queue without its meta): the watch on the listeners directory says
 * when the queue is made again, and the next look registers.
 */
export async function keepListenerRegistered(
  session: Session,
  layout: QueueLayout,
  id: string,
  watch: Watcher,
): Promise<void> {
  const node = `${layout.eventListeners}/${id}`;
  if (await session.exists(node, { watch })) return;
  try {
    await session.create(node, undefined, 'ephemeral');
  } catch (err) {
    if (err instanceof NodeExistsError) return;
    if (!(err instanceof NoNodeError)) throw err;
    if (await session.exists(layout.eventListeners, { watch })) throw err; // made meanwhile: look again
  }
}

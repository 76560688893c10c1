/**
 * Whether a job has dependencies its claimed record may not name: children
 * given to it by `opts.parent` while it ran. A finish that removes its job
 * takes them along only if it knows of them; both front-ends ask here. A
 * queue that never held a parent's dependencies reads nothing.
 */
import { WatchLoop } from '../../zk/watch-loop.js';
import { readDeps } from '../protocol/flow-read.js';
import type { JobRecord } from '../record.js';
import type { QueueStore } from '../store.js';

/** Per queue store: whether the queue ever held a parent's dependencies (see parentsHeld). */
const holdsParents = new WeakMap<QueueStore, Promise<() => boolean>>();
/** The same answers once known, for a finish to take without waiting (hasDependencies). */
const heldNow = new WeakMap<QueueStore, () => boolean>();

/**
 * Whether the queue ever held a parent's dependencies (its `deps`
 * directory exists): until then no finish needs to read them. An
 * exists-watch follows it until it appears (it goes only with the queue);
 * when that cannot be known, the answer is yes.
 */
export async function parentsHeld(store: QueueStore, onError: (err: unknown) => void): Promise<boolean> {
  let known = holdsParents.get(store);
  if (!known) {
    let seen = false;
    const loop: WatchLoop<boolean> = new WatchLoop(store.session, {
      read: async (watch) => (await store.session.exists(store.layout.depsDir, { watch })) !== null,
      onRead: (exists) => {
        if (!exists) return;
        seen = true;
        loop.close();
      },
      onError,
    });
    known = loop.start().then(
      () => () => seen || loop.closed,
      () => () => true,
    );
    void known.then((held) => heldNow.set(store, held));
    holdsParents.set(store, known);
  }
  return (await known)();
}

/**
 * Whether the job of `record` has dependencies: its record says so, or its
 * dependency node exists. Answered at once (no promise) when the record
 * tells, or the queue is known never to have held a parent's dependencies:
 * a worker asks for every job it removes.
 */
export function hasDependencies(
  store: QueueStore,
  record: JobRecord,
  onError: (err: unknown) => void,
): boolean | Promise<boolean> {
  if (record.hasDeps) return true;
  if (heldNow.get(store)?.() === false) return false;
  return readIfHeld(store, record, onError);
}

async function readIfHeld(store: QueueStore, record: JobRecord, onError: (err: unknown) => void): Promise<boolean> {
  if (!(await parentsHeld(store, onError))) return false;
  return (await readDeps(store, record.id)) !== undefined;
}

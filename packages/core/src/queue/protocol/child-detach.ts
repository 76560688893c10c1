/**
 * Child detach: a child that is not finished leaves its parent's
 * dependencies by hand (BullMQ's removeChildDependency), releasing a parent
 * left with nothing pending, and forgets its parent, unless it is running
 * (its record is its attempt's token). One transaction, at the versions
 * read; planned again from a fresh read when the child or its parent
 * changed meanwhile, DETACH_ATTEMPTS times at most.
 */
import { encodeRecord } from '../record.js';
import type { QueueStore } from '../store.js';
import type { Built } from './executor.js';
import { detachOps, joinBuilt } from './flows.js';

/** Plans of a detach whose child or parent keeps changing under it. */
const DETACH_ATTEMPTS = 5;

/**
 * What became of a detach: `detached`; `no-job` (the child does not exist);
 * `no-parent` (its parent does not); `not-pending` (it has no parent, or is
 * no pending dependency of it: nothing was written).
 */
export type ChildDetach = 'detached' | 'no-job' | 'no-parent' | 'not-pending';

/** Takes child `jobId` out of its parent's dependencies; rejects when it kept changing. */
export async function detachChild(store: QueueStore, jobId: string): Promise<ChildDetach> {
  for (let attempt = 1; ; attempt++) {
    const stored = await store.getJob(jobId);
    if (!stored) return 'no-job';
    const link = stored.record.parentLink;
    if (!link) return 'not-pending';
    if (!(await store.sibling(link.queue).getJob(link.id))) return 'no-parent';
    const detach = await detachOps(store, stored.record);
    if (!detach) return 'not-pending';
    const forget: Built | undefined =
      stored.record.state === 'active'
        ? undefined
        : {
            ops: [
              {
                op: 'setData',
                path: store.layout.job(jobId),
                data: encodeRecord({ ...stored.record, parentLink: undefined }),
                version: stored.version,
              },
            ],
          };
    const [result] = await store.executor.run([{ build: () => joinBuilt(detach, forget) }], { receipt: false });
    if (result?.ok) return 'detached';
    if (attempt >= DETACH_ATTEMPTS) {
      throw result?.error ?? new Error(`could not detach job ${jobId} from ${link.queue}:${link.id}`);
    }
  }
}

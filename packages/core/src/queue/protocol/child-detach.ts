/**
 * Child detach: a child that is not finished leaves its parent's
 * dependencies by hand (BullMQ's removeChildDependency), releasing a parent
 * left with nothing pending, and forgets its parent, unless it is running
 * (its record is its attempt's token). One transaction, at the versions
 * read; planned again from a fresh read when the child or its parent
 * changed meanwhile (the executor's retry policy).
 */
import { encodeRecord } from '../record.js';
import { rewriteOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { Built } from './executor.js';
import { detachOps } from './flow-detach.js';
import { joinBuilt } from './flow-parent.js';

/**
 * What became of a detach: `detached`; `no-job` (the child does not exist);
 * `no-parent` (its parent does not); `not-pending` (it has no parent, or is
 * no pending dependency of it: nothing was written).
 */
export type ChildDetach = 'detached' | 'no-job' | 'no-parent' | 'not-pending';

/** Takes child `jobId` out of its parent's dependencies; TooManyConflictsError when it kept changing. */
export async function detachChild(store: ProtocolContext, jobId: string): Promise<ChildDetach> {
  return store.executor.runPlanned<ChildDetach>(
    async () => {
      const stored = await store.getJob(jobId);
      if (!stored) return { answer: 'no-job' };
      const link = stored.record.parentLink;
      if (!link) return { answer: 'not-pending' };
      if (!(await store.sibling(link.queue).getJob(link.id))) return { answer: 'no-parent' };
      const detach = await detachOps(store, stored.record);
      if (!detach) return { answer: 'not-pending' };
      // the child forgets its parent, unless it is running (its record is its attempt's token)
      const forget: Built | undefined =
        stored.record.state === 'active'
          ? undefined
          : {
              ops: rewriteOps(store.layout, {
                id: jobId,
                version: stored.version,
                record: encodeRecord({ ...stored.record, parentLink: undefined }),
              }),
            };
      return { answer: 'detached', unit: { build: () => joinBuilt(detach, forget) } };
    },
    // read back by its receipt: planned again after a lost reply, it found the child no pending dependency
    { receipt: true },
  );
}

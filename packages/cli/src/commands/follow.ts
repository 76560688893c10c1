/**
 * `zkq job <queue> <id> --follow`: after the job, its state changes and
 * progress as they happen (QueueEvents), until it completes (exit 0), fails
 * for good (exit 1) or is removed (exit 5); Ctrl-C stops following (exit 0).
 * A job that finished before the listener was registered is read from its
 * record, so no ending is missed.
 */
import { JobNotFoundError } from '@zkq/core';
import type { GlobalArgs } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { createLogger } from '../logger.js';
import { println } from '../output.js';
import { nextSignal } from './dev-server.js';
import { FollowedEvents, readable } from './events.js';

/** The events of one job printed while it is followed; its ending is told by waitJobFinished. */
const FOLLOWED = ['waiting', 'active', 'progress', 'delayed', 'stalled', 'waiting-children'] as const;

/** Follows job `id` of `queue` (which exists) until it finishes or a signal comes. */
export async function followJob(argv: GlobalArgs & { json: boolean }, queue: string, id: string): Promise<void> {
  const print = (event: string, fields: Record<string, unknown>) =>
    println(argv.json ? JSON.stringify({ event, jobId: id, ...fields }) : readable(event, { jobId: id, ...fields }));
  const followed = new FollowedEvents(argv, queue, '$');
  const { events } = followed;
  for (const name of FOLLOWED) {
    events.on(name, (payload: { jobId: string }) => {
      if (payload.jobId !== id) return;
      const { jobId: _, ...fields } = payload as unknown as Record<string, unknown>;
      print(name, fields);
    });
  }
  try {
    await events.waitUntilReady();
    const stopped = nextSignal();
    createLogger(argv, 'stderr').info({ queue, jobId: id }, 'following the job until it finishes (Ctrl-C stops)');
    const ending = events.waitJobFinished(id).then(
      (returnvalue) => ({ ok: true as const, returnvalue }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    const outcome = await Promise.race([ending, stopped.then(() => undefined), followed.failed.then(() => undefined)]);
    if (followed.failure) throw followed.failure;
    if (!outcome) return;
    if (outcome.ok) {
      print('completed', { returnvalue: outcome.returnvalue });
      return;
    }
    if (outcome.err instanceof JobNotFoundError) {
      print('removed', {});
      throw new CliError(`job ${id} was removed from queue ${queue}`, EXIT.NOT_FOUND);
    }
    const reason = outcome.err instanceof Error ? outcome.err.message : String(outcome.err);
    print('failed', { failedReason: reason });
    throw new CliError(`job ${id} failed: ${reason}`, EXIT.FAILURE);
  } finally {
    await followed.close();
  }
}

/**
 * Queues as zkq of layout 2 left them, for the migration's tests: made with
 * today's code (the nodes of both layouts are the same), then `meta` set
 * back to `{"layout":2}`, and the records of jobs whose layout-2 worker died
 * mid-attempt rewritten as that worker's claim wrote them (`active`, the
 * attempt counted, no claim node any more). Their ready pointers stay at
 * version 0: layout 2's claim only checked them.
 */
import type { Session } from '@zkq/core';
import { decodeRecord, encodeRecord, QueueLayout } from '@zkq/core/internal';

/** Writes `{"layout":2}` into the queue's `meta`, keeping its pause flag. */
export async function setLayout2(session: Session, queue: string): Promise<void> {
  const layout = new QueueLayout(queue);
  const { data } = await session.getData(layout.meta);
  const paused = (JSON.parse(data.toString()) as { paused?: boolean }).paused === true;
  await session.setData(layout.meta, Buffer.from(JSON.stringify({ layout: 2, paused })));
}

/** Rewrites the records of `ids` as a layout-2 claim left them when its worker died. */
export async function leaveActive(session: Session, queue: string, ids: readonly string[]): Promise<void> {
  const layout = new QueueLayout(queue);
  for (const id of ids) {
    const path = layout.job(id);
    const { data, stat } = await session.getData(path);
    const record = decodeRecord(data, path);
    const active = {
      ...record,
      state: 'active' as const,
      attemptsStarted: record.attemptsStarted + 1,
      processedOn: Date.now(),
      processedBy: 'worker-of-layout-2',
    };
    await session.setData(path, encodeRecord(active), stat.version);
  }
}

/** The queue's layout as `meta` says it. */
export async function layoutOf(session: Session, queue: string): Promise<unknown> {
  const { data } = await session.getData(new QueueLayout(queue).meta);
  return (JSON.parse(data.toString()) as { layout?: unknown }).layout;
}

/** Events logged on their own, in no other transaction (pause, resume, cleaned, duplicated): only while someone listens. */
import type { QueueEventRecord } from '../event-record.js';
import type { ProtocolContext } from './context.js';

export async function publishEvents(ctx: ProtocolContext, events: QueueEventRecord[]): Promise<void> {
  if (!ctx.events.enabled) return;
  // with a receipt (the executor adds one to every multi that logs events): sent again, it logged them twice
  await ctx.executor.run([{ build: () => ({ ops: [], events }) }]);
}

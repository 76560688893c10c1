/**
 * A BroadcastChannel on which file-processor fixtures running on worker
 * threads report what they do, and on which a test talks back to them
 * (closed after the test).
 */
import { randomBytes } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';

export function reportChannel<R>(
  t: { after(fn: () => unknown): void },
  prefix: string,
): { name: string; seen: R[]; post: (message: unknown) => void } {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  const ch = new BroadcastChannel(name);
  const seen: R[] = [];
  ch.onmessage = (e) => seen.push((e as { data: R }).data);
  t.after(() => ch.close());
  return { name, seen, post: (message) => ch.postMessage(message) };
}

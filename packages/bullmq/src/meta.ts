/** Queue meta fields (BullMQ's meta hash) and the global rate limit. */
import type { BackendContext } from './context.js';
import { NotSupportedError } from './errors.js';

const todo = (op: string): never => {
  throw new NotSupportedError(op);
};

export async function setQueueMeta(_ctx: BackendContext, _values: Record<string, string | number>): Promise<number> {
  return todo('setQueueMeta');
}
export async function getQueueMetaField(_ctx: BackendContext, _field: string): Promise<string | null> {
  return todo('getQueueMetaField');
}
export async function getQueueMetaFields(_ctx: BackendContext, _fields: string[]): Promise<(string | null)[]> {
  return todo('getQueueMetaFields');
}
export async function getQueueMeta(_ctx: BackendContext): Promise<Record<string, string>> {
  return todo('getQueueMeta');
}
export async function removeQueueMetaFields(_ctx: BackendContext, _fields: string[]): Promise<number> {
  return todo('removeQueueMetaFields');
}
export async function hasQueueMetaField(_ctx: BackendContext, _field: string): Promise<boolean> {
  return todo('hasQueueMetaField');
}
export async function setRateLimit(_ctx: BackendContext, _ms: number): Promise<void> {
  return todo('rate limits');
}
export async function removeRateLimitKey(_ctx: BackendContext): Promise<number> {
  return todo('rate limits');
}
export async function getRateLimitTtl(_ctx: BackendContext, _maxJobs?: number): Promise<number> {
  return todo('rate limits');
}
/** The ttl of the global rate limit now, ms (0 when not limited). */
export async function rateLimitTtl(_ctx: BackendContext): Promise<number> {
  return 0;
}

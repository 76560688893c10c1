/** BullMQ's event stream over zkq's event log. */
import type { StreamReadRaw } from 'bullmq';
import type { BackendContext } from './context.js';
import { NotSupportedError } from './errors.js';

const todo = (op: string): never => {
  throw new NotSupportedError(op);
};

/** Registers a QueueEvents as a listener, so writers start logging events. */
export async function listen(_ctx: BackendContext): Promise<void> {}
/** Ends the registration. */
export async function unlisten(_ctx: BackendContext): Promise<void> {}
export async function trimEvents(_ctx: BackendContext, _maxLength: number): Promise<number> {
  return todo('trimEvents');
}
export async function publishEvent(
  _ctx: BackendContext,
  _fields: Record<string, string | number>,
  _max: number,
): Promise<string> {
  return todo('publishEvent');
}
export async function readEvents(_ctx: BackendContext, _id: string, _blockTimeout: number): Promise<StreamReadRaw> {
  return todo('readEvents');
}

/** The shape of one queue event as stored in the log (events.ts), apart so that the protocol names it without the log's code. */

/** One queue event as stored in the log. */
export interface QueueEventRecord {
  event: string;
  jobId?: string;
  ts: number;
  [field: string]: unknown;
}

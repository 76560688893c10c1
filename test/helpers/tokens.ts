/**
 * A Job's `token` string names its attempt: the ready pointer's czxid (base
 * 36), its place (lane, bucket, sequence), then the fencing token (the
 * pointer's version), dot-separated. A job added again under the same id
 * gets a new pointer, whose versions start again.
 */

/** The fencing token a Job's `token` string carries (after its pointer's czxid and place). */
export function fencing(token: string): string;
export function fencing(token: string | undefined): string | undefined;
export function fencing(token: string | undefined): string | undefined {
  return token?.slice(token.lastIndexOf('.') + 1);
}

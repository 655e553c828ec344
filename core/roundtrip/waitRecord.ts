import { randomBytes } from 'node:crypto';

import { type Refusal, WAIT_ID_PARAM, constantTimeEqual, hmacSha256 } from './signature';
import type { WaitState } from './timeout';

/**
 * What one wait keeps with its execution (n8n's custom data: one text value of at most 255
 * characters, saved with the waiting execution and read back on every callback), the callback URL
 * that names the wait, and the internal notice by which the node reports that its own outbound
 * request failed after the wait was saved.
 */

export const WAIT_RECORD_VERSION = 1;
/** n8n's limit for one custom-data value. */
const MAX_RECORD_LENGTH = 255;
/** The header of the node's internal "request failed" notice to its own waiting run. */
export const NOTICE_HEADER = 'x-round-trip-notice';

export interface WaitRecord extends WaitState {
	/** Key of the internal notice: known only to this wait (the execution's stored data). */
	noticeKey: string;
}

/** A fresh wait: `sendAndWait` gets a wait id for its callback URL; Wait Only has none (n8n's plain resume URL was sent). */
export function newWait(
	startedAtMs: number,
	deadlineMs: number,
	withWaitId: boolean,
	random: (bytes: number) => Buffer = randomBytes,
): WaitRecord {
	return {
		waitId: withWaitId ? random(16).toString('base64url') : '',
		startedAtMs,
		deadlineMs,
		noticeKey: random(32).toString('base64url'),
	};
}

export function encodeWaitRecord(record: WaitRecord): string {
	const text = JSON.stringify({
		v: WAIT_RECORD_VERSION,
		w: record.waitId,
		s: record.startedAtMs,
		d: record.deadlineMs,
		k: record.noticeKey,
	});
	if (text.length > MAX_RECORD_LENGTH)
		throw new RangeError(
			`wait record is ${text.length} characters; n8n keeps at most ${MAX_RECORD_LENGTH}`,
		);
	return text;
}

/** The record, or undefined when the text is not one this version wrote (the caller refuses the callback). */
export function decodeWaitRecord(text: unknown): WaitRecord | undefined {
	if (typeof text !== 'string') return undefined;
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		return undefined;
	}
	const r = parsed as { v?: unknown; w?: unknown; s?: unknown; d?: unknown; k?: unknown };
	if (
		r?.v !== WAIT_RECORD_VERSION ||
		typeof r.w !== 'string' ||
		typeof r.k !== 'string' ||
		r.k === ''
	)
		return undefined;
	if (!Number.isSafeInteger(r.s) || !Number.isSafeInteger(r.d)) return undefined;
	return { waitId: r.w, startedAtMs: r.s as number, deadlineMs: r.d as number, noticeKey: r.k };
}

/** n8n's resume URL with this wait's id added, as the partner must call it. */
export function callbackUrlFor(resumeUrl: string, waitId: string): string {
	if (waitId === '') return resumeUrl;
	const url = new URL(resumeUrl);
	url.searchParams.set(WAIT_ID_PARAM, waitId);
	return url.toString();
}

/** The value of the notice header for `body`. */
export function signNotice(record: WaitRecord, body: string): string {
	return hmacSha256(record.noticeKey, `notice.${record.waitId}.`, body).toString('hex');
}

/** Whether a request claiming to be the node's own notice is one. */
export function verifyNotice(
	record: WaitRecord,
	presented: string,
	body: string,
): { ok: true } | Refusal<403> {
	return constantTimeEqual(presented, signNotice(record, body))
		? { ok: true }
		: { ok: false, status: 403, reason: `${NOTICE_HEADER} does not match this wait` };
}

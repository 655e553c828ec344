import { randomBytes } from 'node:crypto';

import { type Refusal, WAIT_ID_PARAM, constantTimeEqual, hmacSha256 } from './signature';
import type { WaitState } from './timeout';

/**
 * What one wait keeps with its execution, the callback URL that names the wait, and the internal
 * notice by which the node reports that its own outbound request failed after the wait was saved.
 *
 * The record is kept in the waiting node's own entry of the execution's node stack (its metadata),
 * which n8n saves with the waiting execution and hands back to the node's webhook: it exists exactly
 * as long as the wait does, and takes none of the execution's 10 custom-data keys. Records of the
 * first version (custom data `roundTripWait` plus `correlationId`) are still read, so a run that was
 * waiting when the package was upgraded still resumes.
 */

export const WAIT_RECORD_VERSION = 2;
const LEGACY_WAIT_RECORD_VERSION = 1;
/** The name of the record in the stack entry's metadata (and of the version-1 record in custom data). */
export const WAIT_RECORD_KEY = 'roundTripWait';
/** The header of the node's internal "request failed" notice to its own waiting run. */
export const NOTICE_HEADER = 'x-round-trip-notice';

export interface WaitRecord extends WaitState {
	/** The correlation id the callback must carry. */
	correlationId: string;
	/** Key of the internal notice, one per wait: a notice must carry it as well as pass the callback's checks. */
	noticeKey: string;
}

/** A fresh wait: `sendAndWait` gets a wait id for its callback URL; Wait Only has none (n8n's plain resume URL was sent). */
export function newWait(
	correlationId: string,
	startedAtMs: number,
	deadlineMs: number,
	withWaitId: boolean,
	random: (bytes: number) => Buffer = randomBytes,
): WaitRecord {
	return {
		waitId: withWaitId ? random(16).toString('base64url') : '',
		correlationId,
		startedAtMs,
		deadlineMs,
		noticeKey: random(32).toString('base64url'),
	};
}

export function encodeWaitRecord(record: WaitRecord): string {
	return JSON.stringify({
		v: WAIT_RECORD_VERSION,
		w: record.waitId,
		c: record.correlationId,
		s: record.startedAtMs,
		d: record.deadlineMs,
		k: record.noticeKey,
	});
}

/**
 * The record, or undefined when the text is not one this package wrote (the caller refuses the
 * callback). A version-1 record kept no correlation id: it came from its own custom-data key,
 * passed as `legacyCorrelationId`.
 */
export function decodeWaitRecord(
	text: unknown,
	legacyCorrelationId?: unknown,
): WaitRecord | undefined {
	if (typeof text !== 'string') return undefined;
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		return undefined;
	}
	const r = parsed as {
		v?: unknown;
		w?: unknown;
		c?: unknown;
		s?: unknown;
		d?: unknown;
		k?: unknown;
	};
	const correlationId =
		r?.v === WAIT_RECORD_VERSION
			? r.c
			: r?.v === LEGACY_WAIT_RECORD_VERSION
				? legacyCorrelationId
				: undefined;
	if (typeof correlationId !== 'string' || correlationId === '') return undefined;
	if (typeof r.w !== 'string' || typeof r.k !== 'string' || r.k === '') return undefined;
	if (!Number.isSafeInteger(r.s) || !Number.isSafeInteger(r.d)) return undefined;
	return {
		waitId: r.w,
		correlationId,
		startedAtMs: r.s as number,
		deadlineMs: r.d as number,
		noticeKey: r.k,
	};
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

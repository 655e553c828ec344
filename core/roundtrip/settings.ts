import jsonata from 'jsonata';

import {
	type CorrelationPath,
	compileCorrelationPath,
	normalizeCorrelationId,
	readsOnlyHeadersOrQuery,
} from './correlation';
import { compileResumeCondition, type ResumeCondition } from './condition';
import type { CallbackAuth } from './signature';
import { MAX_WAIT_MS, type TimeoutUnit, timeoutMs, type WaitTimeout } from './timeout';
import { checkRange, ConfigError, credentialRef, fieldRef, showValue } from '../configError';
import { SECOND_MS, UNIT_MS } from '../units';
import {
	GENERIC_AUTH_TYPES,
	type HttpAuthChoice,
	isGenericAuthType,
	LEGACY_HTTP_CREDENTIAL,
} from '../connectors/httpAuth';

/**
 * Every setting of the Round-Trip Wait node, checked before anything is sent or any wait starts.
 * A refusal names the field (the node says it as its editor labels it) and shows the value it got,
 * so a bad Response Code fails the node at once instead of answering every valid callback with a 500
 * while the run waits for its timeout.
 */

/** The node's fields (RoundTripWait.node.ts), by parameter name: what every message names. */
export const SETTING_NAMES = [
	'mode',
	'callbackVia',
	'correlationId',
	'correlationIdFrom',
	'correlationIdInAnswer',
	'authentication',
	'method',
	'url',
	'body',
	'correlationIdField',
	'callbackUrlField',
	'headers',
	'correlationIdPath',
	'resumeCondition',
	'timeoutAmount',
	'timeoutUnit',
	'responseCode',
	'responseBody',
] as const;

export type SettingName = (typeof SETTING_NAMES)[number];

/** n8n's limit for a custom-data value, where the waiting run keeps its correlation id. */
export const MAX_CORRELATION_ID_LENGTH = 255;
export const METHODS = ['DELETE', 'GET', 'PATCH', 'POST', 'PUT'] as const;
export type Method = (typeof METHODS)[number];

/** The node's parameters as n8n hands them over (expressions already evaluated). */
export type RawSettings = Partial<Record<SettingName, unknown>>;

export interface OutboundRequest {
	method: Method;
	url: string;
	/** How the request authenticates: none, one of n8n's generic credential types, or this package's own credential. */
	auth: HttpAuthChoice;
	body: Record<string, unknown>;
	headers: Record<string, string>;
	correlationIdField: string;
	callbackUrlField: string;
}

export interface RoundTripSettings {
	mode: 'sendAndWait' | 'waitOnly';
	/**
	 * Where the partner calls back: `perWait`, the run's own callback URL (sent with the request); or
	 * `fixed`, the one URL of a Round-Trip Callback node, which finds this run by its correlation id.
	 */
	callbackVia: 'perWait' | 'fixed';
	/** Undefined: the node makes a fresh one. With `answerIdPath`, the id sent with the request only. */
	correlationId?: string;
	/**
	 * Send and Wait, Callback URL "Fixed": where the partner's own id for the request is in its answer
	 * to it (Correlation ID From "The Partner's Answer"); the run waits for that id. Undefined: the
	 * run waits for `correlationId`.
	 */
	answerIdPath?: AnswerIdPath;
	correlationPath: CorrelationPath;
	/** Undefined: every authenticated callback with the right id resumes. */
	resumeCondition?: ResumeCondition;
	timeout: WaitTimeout;
	responseCode: number;
	responseBody: unknown;
	/** Only in Send and Wait mode. */
	request?: OutboundRequest;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Throws a ConfigError (field = the parameter name) for the first setting that cannot work. */
export function validateSettings(raw: RawSettings): RoundTripSettings {
	const mode = raw.mode ?? 'sendAndWait';
	if (mode !== 'sendAndWait' && mode !== 'waitOnly')
		fail('mode', 'must be "Send and Wait" or "Wait Only"', mode);

	const callbackVia = raw.callbackVia ?? 'perWait';
	if (callbackVia !== 'perWait' && callbackVia !== 'fixed')
		fail('callbackVia', 'must be "Per Wait" or "Fixed (Round-Trip Callback node)"', callbackVia);
	const correlationId = checkCorrelationId(raw.correlationId);
	// Nobody but this run would know a fresh random id unless the request carries it.
	if (callbackVia === 'fixed' && mode === 'waitOnly' && correlationId === undefined)
		fail(
			'correlationId',
			'must give the id the partner calls back with (e.g. {{ $json.orderNumber }}) when a Round-Trip Callback node finds the run by it in Wait Only mode: a fresh random ID would be known to no partner',
			raw.correlationId,
		);
	const answerIdPath = checkAnswerIdPath(raw, mode, callbackVia);
	const correlationPath = checkCorrelationPath(raw.correlationIdPath);
	const resumeCondition = checkResumeCondition(raw.resumeCondition);
	const timeout = checkTimeout(raw.timeoutAmount, raw.timeoutUnit);
	const responseCode = checkResponseCode(raw.responseCode);
	const responseBody = parseJson('responseBody', raw.responseBody, { '{ }': true, '[ ]': true });
	const settings: RoundTripSettings = {
		mode,
		callbackVia,
		correlationId,
		answerIdPath,
		correlationPath,
		resumeCondition,
		timeout,
		responseCode,
		responseBody,
	};
	if (mode === 'sendAndWait') settings.request = checkRequest(raw);
	return settings;
}

/**
 * Throws a ConfigError when no callback could resume the wait under `auth`: in Wait Only mode an HMAC
 * signature names no wait, so the correlation id is read from the signed body only (judgeCallback);
 * a location that reads only headers or the query would refuse every callback.
 */
export function checkCallbackBinding(settings: RoundTripSettings, auth: CallbackAuth): void {
	if (
		settings.mode === 'waitOnly' &&
		auth.scheme === 'hmac' &&
		readsOnlyHeadersOrQuery(settings.correlationPath)
	) {
		fail(
			'correlationIdPath',
			'must read the body in Wait Only mode with an HMAC signature (e.g. body.correlationId): the signature covers the body but names no wait, and headers and the query are not signed, so a callback for one run could be resent to another with its id there',
			settings.correlationPath.expression,
		);
	}
}

function checkCorrelationId(value: unknown): string | undefined {
	if (value === undefined || value === null || value === '') return undefined;
	const id = normalizeCorrelationId(value);
	if (id === undefined)
		fail('correlationId', 'must be text or a number (or empty for a fresh random ID)', value);
	if (id.length > MAX_CORRELATION_ID_LENGTH) {
		fail(
			'correlationId',
			`${id.length} characters long; at most ${MAX_CORRELATION_ID_LENGTH} are supported (n8n's limit for execution custom data)`,
			value,
		);
	}
	return id;
}

/** The partner's answer to the request, as Correlation ID in Answer reads it. */
export interface PartnerAnswer {
	status: number;
	/** Lower-cased header names. */
	headers: Record<string, string>;
	/** Parsed as JSON when it is JSON, else the text. */
	body: unknown;
}

/** Correlation ID in Answer, compiled: JSONata over the partner's answer `{ status, headers, body }`. */
export interface AnswerIdPath {
	readonly expression: string;
	evaluate(answer: PartnerAnswer): Promise<unknown>;
}

/**
 * Correlation ID From "The Partner's Answer" (only the partner knows its id until it answers, e.g.
 * an envelope id): only where the run is found by the partner's id, Send and Wait with Callback URL
 * "Fixed". Compiled now, so a syntax error fails the node before anything is sent.
 */
function checkAnswerIdPath(
	raw: RawSettings,
	mode: RoundTripSettings['mode'],
	callbackVia: RoundTripSettings['callbackVia'],
): AnswerIdPath | undefined {
	const from = raw.correlationIdFrom ?? 'node';
	if (from !== 'node' && from !== 'answer')
		fail('correlationIdFrom', `must be "This Node's Value" or "The Partner's Answer"`, from);
	if (from === 'node') return undefined;
	if (mode !== 'sendAndWait' || callbackVia !== 'fixed')
		fail(
			'correlationIdFrom',
			`can be "The Partner's Answer" only in Send and Wait mode with Callback URL "Fixed": only there is the run found by the partner's id, and only there does this node get the answer`,
			from,
		);
	const expression = raw.correlationIdInAnswer;
	if (typeof expression !== 'string' || expression.trim() === '')
		fail(
			'correlationIdInAnswer',
			"must be a JSONata expression over the partner's answer { status, headers, body }, e.g. body.envelopeId",
			expression,
		);
	try {
		const compiled = jsonata(expression);
		return { expression, evaluate: async (answer) => (await compiled.evaluate(answer)) as unknown };
	} catch (error) {
		return fail(
			'correlationIdInAnswer',
			`not a valid JSONata expression (${(error as Error).message})`,
			expression,
		);
	}
}

/**
 * The partner's id for the request, read from its answer: the id the run waits for. Throws a
 * ConfigError naming Correlation ID in Answer, what it gave and the answer when it gives no id
 * (nothing, or not text or a number), so the run fails before it waits for a callback nobody could match.
 */
export async function correlationIdFromAnswer(
	path: AnswerIdPath,
	answer: PartnerAnswer,
): Promise<string> {
	const inAnswer = `in the partner's answer (HTTP ${answer.status}, body ${showValue(answer.body)})`;
	let found: unknown;
	try {
		found = await path.evaluate(answer);
	} catch (error) {
		fail(
			'correlationIdInAnswer',
			`failed ${inAnswer}: ${(error as Error).message}`,
			path.expression,
		);
	}
	const id = normalizeCorrelationId(found);
	if (id === undefined)
		fail(
			'correlationIdInAnswer',
			`gave ${found === undefined ? 'nothing' : showValue(found)} ${inAnswer}; it must give the partner's id for the request, text or a number`,
			path.expression,
		);
	if (id.length > MAX_CORRELATION_ID_LENGTH)
		fail(
			'correlationIdInAnswer',
			`gave an id ${id.length} characters long ${inAnswer}; at most ${MAX_CORRELATION_ID_LENGTH} are supported (n8n's limit for execution custom data)`,
			path.expression,
		);
	return id;
}

function checkCorrelationPath(value: unknown): CorrelationPath {
	if (typeof value !== 'string' || value.trim() === '') {
		fail(
			'correlationIdPath',
			'must be a JSONata expression over { body, headers, query }, e.g. body.correlationId',
			value,
		);
	}
	try {
		return compileCorrelationPath(value);
	} catch (error) {
		return fail(
			'correlationIdPath',
			`not a valid JSONata expression (${(error as Error).message})`,
			value,
		);
	}
}

function checkResumeCondition(value: unknown): ResumeCondition | undefined {
	if (value === undefined || value === null || (typeof value === 'string' && value.trim() === ''))
		return undefined;
	if (typeof value !== 'string')
		fail(
			'resumeCondition',
			'must be a JSONata expression over { body, headers, query }, e.g. body.status = "signed"',
			value,
		);
	try {
		return compileResumeCondition(value);
	} catch (error) {
		return fail(
			'resumeCondition',
			`not a valid JSONata expression (${(error as Error).message})`,
			value,
		);
	}
}

function checkTimeout(amount: unknown, unit: unknown): WaitTimeout {
	if (typeof unit !== 'string' || !(unit in UNIT_MS))
		fail('timeoutUnit', `must be one of ${Object.keys(UNIT_MS).join(', ')}`, unit);
	if (typeof amount !== 'number' || !Number.isFinite(amount))
		fail('timeoutAmount', 'must be a number', amount);
	const timeout = { amount, unit: unit as TimeoutUnit };
	checkRange(
		'timeoutAmount',
		timeoutMs(timeout),
		{ min: SECOND_MS, max: MAX_WAIT_MS },
		{ duration: true },
	);
	return timeout;
}

function checkResponseCode(value: unknown): number {
	const code = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
	if (typeof code !== 'number' || !Number.isInteger(code) || code < 200 || code > 299) {
		fail(
			'responseCode',
			'must be a whole number from 200 to 299: it answers the callback that resumed the run, a success',
			value,
		);
	}
	return code;
}

function checkRequest(raw: RawSettings): OutboundRequest {
	const authentication = raw.authentication ?? 'none';
	let auth: HttpAuthChoice;
	if (authentication === 'none') auth = { kind: 'none' };
	else if (authentication === LEGACY_HTTP_CREDENTIAL) auth = { kind: 'legacy', required: true };
	else if (isGenericAuthType(authentication)) auth = { kind: 'generic', type: authentication };
	else
		fail(
			'authentication',
			`must be one of None, ${[...GENERIC_AUTH_TYPES, LEGACY_HTTP_CREDENTIAL].map(credentialRef).join(', ')}`,
			authentication,
		);

	const method = raw.method ?? 'POST';
	if (!METHODS.includes(method as Method))
		fail('method', `must be one of ${METHODS.join(', ')}`, method);

	if (typeof raw.url !== 'string' || raw.url.trim() === '')
		fail('url', 'must not be empty: it is where the request goes', raw.url);
	const url = raw.url.trim();
	if (/^[a-z][a-z0-9+.-]*:/i.test(url)) {
		let parsed: URL | undefined;
		try {
			parsed = new URL(url);
		} catch {
			fail('url', 'not a valid URL', url);
		}
		if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
			fail('url', 'must be an http:// or https:// URL', url);
	} else if (auth.kind !== 'legacy') {
		fail(
			'url',
			`must be an absolute http(s) URL (a relative URL needs ${fieldRef('authentication')} "${credentialRef(LEGACY_HTTP_CREDENTIAL)}", whose base URL it extends)`,
			url,
		);
	}

	const body = parseJson('body', raw.body ?? '{}', { '{ }': true }) as Record<string, unknown>;
	const headers = parseJson('headers', raw.headers ?? '{}', { '{ }': true }) as Record<
		string,
		unknown
	>;
	for (const [name, value] of Object.entries(headers)) {
		if (!HEADER_NAME.test(name))
			fail('headers', `${JSON.stringify(name)} is not a valid HTTP header name`, raw.headers);
		if (typeof value !== 'string')
			fail(
				'headers',
				`must map each header name to text; ${JSON.stringify(name)} is ${describe(value)}`,
				raw.headers,
			);
	}

	const correlationIdField = checkFieldName(
		'correlationIdField',
		raw.correlationIdField ?? 'correlationId',
	);
	const callbackUrlField = checkFieldName(
		'callbackUrlField',
		raw.callbackUrlField ?? 'callbackUrl',
	);
	if (correlationIdField !== '' && correlationIdField === callbackUrlField) {
		fail(
			'callbackUrlField',
			`must differ from ${fieldRef('correlationIdField')}: both would write the same body field`,
			callbackUrlField,
		);
	}
	return {
		method: method as Method,
		url,
		auth,
		body,
		headers: headers as Record<string, string>,
		correlationIdField,
		callbackUrlField,
	};
}

function checkFieldName(name: 'correlationIdField' | 'callbackUrlField', value: unknown): string {
	if (typeof value !== 'string')
		fail(name, 'must be a body field name, or empty to leave the body as written', value);
	return value.trim();
}

/** JSON text (or an object n8n already parsed) of one of the accepted shapes. */
function parseJson(
	name: SettingName,
	value: unknown,
	accepts: { '{ }'?: boolean; '[ ]'?: boolean },
): unknown {
	let parsed = value;
	if (typeof value === 'string') {
		if (value.trim() === '') parsed = {};
		else {
			try {
				parsed = JSON.parse(value);
			} catch (error) {
				fail(name, `not valid JSON (${(error as Error).message})`, value);
			}
		}
	}
	const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
	if ((isObject && accepts['{ }']) || (Array.isArray(parsed) && accepts['[ ]'])) return parsed;
	const wanted = accepts['[ ]'] ? 'a JSON object or array' : 'a JSON object';
	return fail(name, `must be ${wanted}, not ${describe(parsed)}`, value);
}

function fail(name: SettingName, problem: string, value: unknown): never {
	throw new ConfigError(name, value, problem);
}

function describe(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'a list';
	return `${typeof value === 'object' ? 'an' : 'a'} ${typeof value}`;
}

import jsonata from 'jsonata';

import type { CallbackParts } from './correlation';

/**
 * The Round-Trip Wait's Resume Condition: JSONata over the callback's `{ body, headers, query }`
 * (e.g. `body.status in ["signed", "declined"]`). Partners that report every step of a request
 * ("created", "viewed", "signed") to one URL send events the run does not wait for: only a callback
 * for which the condition is `true` resumes; any other is answered 202 and the run keeps waiting.
 * Empty: every authenticated callback with the right id resumes (as before the condition existed).
 */
export interface ResumeCondition {
	readonly expression: string;
	/** `true` only when the expression gives exactly `true`; a failure to evaluate is no match. */
	matches(parts: CallbackParts): Promise<{ matched: boolean; why?: string }>;
}

/** Compiles at setup, so a syntax error fails the node before the wait (validateSettings names the field). */
export function compileResumeCondition(expression: string): ResumeCondition {
	const compiled = jsonata(expression);
	return {
		expression,
		async matches(parts) {
			try {
				const result: unknown = await compiled.evaluate(parts);
				return result === true
					? { matched: true }
					: { matched: false, why: `${expression} is ${describe(result)}, not true` };
			} catch (error) {
				return { matched: false, why: `evaluating ${expression} failed (${error.message})` };
			}
		},
	};
}

function describe(value: unknown): string {
	if (value === undefined) return 'undefined';
	const text = JSON.stringify(value);
	return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

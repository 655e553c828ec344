import type { INodeProperties, IRun } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import {
	checkedRetryPolicy,
	MAX_ATTEMPTS_MAX,
	type RetryPolicy,
	type RunResult,
} from '../../core/retryPolicy';

/**
 * "When a Run Fails" on both triggers (core/retryPolicy.ts): its parameters as the editor shows
 * them, the policy read from them, and how n8n ended a run as the core reads it.
 */

/** The parameters; `what` is what starts again ("Item", "Window") and `again` what that means. */
export function whenRunFailsProperties(what: string, again: string): INodeProperties[] {
	const shown = { displayOptions: { show: { whenRunFails: ['startAgain'] } } };
	return [
		{
			displayName: 'When a Run Fails',
			name: 'whenRunFails',
			type: 'options',
			noDataExpression: true,
			default: 'leaveFailed',
			description:
				"What happens when a run fails (n8n's status error or crashed; a run that waits has not failed)",
			options: [
				{
					name: 'Leave It Failed',
					value: 'leaveFailed',
					description: "The failed execution is n8n's, to retry by hand",
				},
				{ name: `Start the ${what} Again`, value: 'startAgain', description: again },
			],
		},
		{
			displayName: 'Max Attempts',
			name: 'maxAttempts',
			type: 'number',
			default: 3,
			typeOptions: { minValue: 1, maxValue: MAX_ATTEMPTS_MAX },
			...shown,
			description: `Runs in all, the first included (1 to ${MAX_ATTEMPTS_MAX})`,
		},
		{
			displayName: 'Retry Delay (Seconds)',
			name: 'retryDelaySec',
			type: 'number',
			default: 60,
			typeOptions: { minValue: 1 },
			...shown,
			description: 'The wait after the first failed run (at least 1 second, at most 7 days)',
		},
		{
			displayName: 'Retry Delay Factor',
			name: 'retryFactor',
			type: 'number',
			default: 2,
			typeOptions: { minValue: 1, maxValue: 10, numberPrecision: 2 },
			...shown,
			description: 'Each next wait is this many times the one before (1 to 10)',
		},
		{
			displayName: 'Retry Delay Cap (Seconds)',
			name: 'retryDelayCapSec',
			type: 'number',
			default: 3600,
			typeOptions: { minValue: 1 },
			...shown,
			description: 'The longest wait between attempts (at least the Retry Delay, at most 7 days)',
		},
	];
}

/** Reads When a Run Fails and, for Start … Again, its policy (checked by the core). */
export function readRetryPolicy(
	parameter: (name: string, fallback: unknown) => unknown,
): RetryPolicy | undefined {
	const when = parameter('whenRunFails', 'leaveFailed');
	if (when === 'leaveFailed') return undefined;
	if (when !== 'startAgain')
		throw new ConfigError('whenRunFails', when, 'must be leaveFailed or startAgain');
	return checkedRetryPolicy({
		maxAttempts: Number(parameter('maxAttempts', 3)),
		firstDelayMs: Number(parameter('retryDelaySec', 60)) * 1000,
		factor: Number(parameter('retryFactor', 2)),
		maxDelayMs: Number(parameter('retryDelayCapSec', 3600)) * 1000,
	});
}

/** How n8n ended a run (the done-promise's run), for the core; undefined: n8n refused it as a duplicate. */
export function runResult(result: IRun | undefined): RunResult | undefined {
	if (!result) return undefined;
	const message = result.data?.resultData?.error?.message;
	return { status: result.status, ...(message !== undefined && { errorMessage: message }) };
}

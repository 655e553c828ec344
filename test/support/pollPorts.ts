import type {
	PollActivationPorts,
	PollRunToEmit,
	PollTriggerState,
} from '../../core/poll/activation';

type PollOutlet = PollActivationPorts['outlet'];

/** A poll activation's outlet that needs nothing of n8n: nothing in flight, no stores, no logs. */
export const quietOutlet: Omit<PollOutlet, 'write' | 'emit' | 'emitTaken'> = {
	inFlight: () => false,
	writeNow: () => undefined,
	storeNow: () => undefined,
	info: () => undefined,
	warn: () => undefined,
};

/** Poll activation ports that need nothing of n8n: no transport, polls that fail throw. */
export const quietPorts: Omit<PollActivationPorts, 'outlet'> = {
	context: {},
	onPollFailure: (error: Error) => {
		throw error;
	},
	onPageLimit: () => undefined,
	onUnlisted: () => undefined,
	onDeadLetter: () => undefined,
	onSilence: () => undefined,
};

/**
 * Quiet ports whose outlet records every run emitted into `emitted` and hands each write to
 * `write`; `outlet` replaces more of the outlet.
 */
export function recordingPorts(
	emitted: PollRunToEmit[],
	write: (state: PollTriggerState) => void = () => undefined,
	outlet: Partial<PollOutlet> = {},
): PollActivationPorts {
	return {
		...quietPorts,
		outlet: {
			...quietOutlet,
			write,
			emit: async (runs) => void emitted.push(...runs),
			emitTaken: async (take) => void emitted.push(...take()),
			...outlet,
		},
	};
}

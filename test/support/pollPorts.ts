import type { PollActivationPorts } from '../../core/poll/activation';

/** Poll activation ports that need nothing of n8n: no transport, polls that fail throw, no logs. */
export const quietPorts: Omit<PollActivationPorts, 'write' | 'emit' | 'emitTaken'> = {
	context: {},
	inFlight: () => false,
	writeNow: () => undefined,
	onPollFailure: (error: Error) => {
		throw error;
	},
	onPageLimit: () => undefined,
	onDeadLetter: () => undefined,
	onSilence: () => undefined,
	info: () => undefined,
	warn: () => undefined,
};

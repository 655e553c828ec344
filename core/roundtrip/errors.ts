/**
 * A Round-Trip Wait setting that cannot work. Thrown while the node is being set up (before the
 * run pauses), so a broken configuration fails loudly instead of leaving a run waiting forever
 * for a callback it could never accept.
 */
export class RoundTripConfigError extends Error {
	constructor(
		/** The node parameter at fault, so the UI can point at it. */
		readonly field: string,
		message: string,
	) {
		super(message);
		this.name = 'RoundTripConfigError';
	}
}

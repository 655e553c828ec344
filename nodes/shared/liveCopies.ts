import type { IDataObject } from 'n8n-workflow';

/**
 * A trigger's node static data in every copy of its workflow's static data that this process
 * activated it on, by `<workflow id>:<node id>`. n8n 2.x's publication service re-registers only the
 * triggers whose node changed, each on a new copy of the static data read from the database, while
 * the workflow's other triggers keep theirs; every trigger's emit saves its whole copy. Writing a
 * trigger's state into every copy still alive keeps another trigger's save from storing an old state
 * of this one. Copies are held weakly: a deactivated workflow's copy goes with it.
 */
const copiesByNode = new Map<string, Set<WeakRef<IDataObject>>>();

/**
 * Registers this activation's node static data and returns the trigger's one way to set `key` in it:
 * in this copy and in every other live copy of the same node.
 */
export function writerToLiveCopies(
	nodeKey: string,
	staticData: IDataObject,
): (key: string, value: IDataObject) => void {
	const copies = copiesByNode.get(nodeKey) ?? new Set<WeakRef<IDataObject>>();
	copiesByNode.set(nodeKey, copies);
	copies.add(new WeakRef(staticData));
	return (key, value) => {
		staticData[key] = value;
		for (const copy of copies) {
			const other = copy.deref();
			if (other === undefined) copies.delete(copy);
			else if (other !== staticData) other[key] = value;
		}
	};
}

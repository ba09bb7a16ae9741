/**
 * A test-only pi extension: `/tree-to <entryId>` navigates the session tree to the entry
 * and asks for a summary of the branch left, as picking an entry in pi's `/tree` does
 * (RPC mode has no tree command; an extension command's context can navigate).
 */
export default function (pi: any) {
  pi.registerCommand("tree-to", {
    description: "navigate to an entry, summarizing the branch left",
    handler: async (args: string, ctx: any) => {
      await ctx.navigateTree(args.trim(), { summarize: true });
    },
  });
}

using System.CommandLine;
using Magpie.Commands;

var root = new RootCommand("Magpie: a message-driven document indexing pipeline")
{
    RunCommand.Create(),
    ProduceCommand.Create(),
    KeysCommand.Create(),
};
return await root.Parse(args).InvokeAsync();

package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print Heed's version",
		Example: "  heed version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(env.Stdout, "heed %s\n", env.Version)
			if err != nil {
				return exit(ExitFailed)
			}
			return nil
		},
	}
}

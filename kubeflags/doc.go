// Package kubeflags is kube-apiserver's command line for an annex server:
// an Options value registers kube's flags (named, defaulted and meaning as
// kube-apiserver's and k8s.io/sample-apiserver's) on a pflag.FlagSet, and
// Apply turns what was given into annex.Builder fields, every problem at
// once, each naming its flag. The root package imports no flag library;
// this package composes the flag sets of audit, flowcontrol and
// storage/etcd, so --etcd-servers is there wherever --storage-backend is.
//
// # Usage
//
//	b := annex.Builder{Name: "example", Resources: resources}
//	var opts kubeflags.Options
//	fs := pflag.NewFlagSet("example", pflag.ContinueOnError)
//	opts.AddFlags(fs, &b)        // b's values are the defaults --help shows
//	if err := fs.Parse(os.Args[1:]); err != nil { ... }
//	if err := opts.Apply(&b); err != nil { ... } // names the flags
//	srv, err := b.Build()
//
// # No silent flags
//
// A flag given that has no effect in the chosen mode is an error of Apply
// that names it (rules.go): a delegation flag without --delegated-auth, an
// --audit-log-* flag without --audit-log-path, an --etcd-* flag without
// --etcd-servers, a flag whose Builder field the program set in code. Flags
// kube-apiserver has that mean nothing here (--egress-selector-config-file,
// --emulated-version, ...) are accepted only to be refused with the reason.
//
// # Help
//
// AddFlags makes fs's usage print the flags in kube's sections ("Secure
// serving flags:", "Authentication flags:", ...), the program's own last
// under "Misc flags:"; PrintSections does the same for any writer.
package kubeflags

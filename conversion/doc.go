// Package conversion calls a conversion webhook, as kube-apiserver does for
// a CustomResourceDefinition whose spec.conversion.strategy is Webhook: a
// Webhook is a rest.Converter that posts an apiextensions.k8s.io/v1
// ConversionReview over HTTPS (trusting the caBundle) and checks the answer
// as kube-apiserver checks it.
//
//	hook, err := conversion.NewWebhook(conversion.WebhookConfig{
//		Name: "environments.platform.example.com",
//		URL:  "https://converter.example.com/convert",
//		CABundle: caPEM,
//	})
//	// ...
//	beta.Conversion = hook
//
// The objects of one LIST go in one review, as kube-apiserver sends them.
// Errors are kube-apiserver's: a 500 Status whose message starts
// "conversion webhook for <group>/<version>, Kind=<Kind> failed".
package conversion

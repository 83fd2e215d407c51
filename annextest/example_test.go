package annextest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
)

// A server with one namespaced resource: create a widget with the admin
// client, then read it back. A test would call annextest.Start(t, b)
// instead, which stops the server when the test ends.
func ExampleNewServer() {
	b := annex.Builder{Resources: []rest.Resource{{
		Group: "example.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
	}}}
	srv, err := annextest.NewServer(b)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	widgets := srv.URL + "/apis/example.annex.dev/v1/namespaces/default/widgets"
	do := func(method, url, body string) (int, []byte) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			log.Fatal(err)
		}
		return resp.StatusCode, data
	}

	code, _ := do(http.MethodPost, widgets, `{"apiVersion":"example.annex.dev/v1","kind":"Widget","metadata":{"name":"first"},"spec":{"size":3}}`)
	fmt.Println("create:", code)
	code, data := do(http.MethodGet, widgets+"/first", "")
	fmt.Println("get:", code)
	var w struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		log.Fatal(err)
	}
	fmt.Println("name:", w.Metadata.Name)
	// Output:
	// create: 201
	// get: 200
	// name: first
}
